"""Task checkpoint file: atomic write/read, corruption detection."""

from __future__ import annotations

import os

import pytest

from edge.errors import StateStoreError
from edge.state.checkpoint import checkpoint_path, delete_checkpoint, read_checkpoint, write_checkpoint


def test_round_trip_and_kafka_format(tmp_path) -> None:
    path = checkpoint_path(tmp_path / "app" / "0_1")
    offsets = {("app-b-changelog", 1): 7, ("app-a-changelog", 1): 1042}
    write_checkpoint(path, offsets)
    assert read_checkpoint(path) == offsets
    assert path.read_text() == "0\n2\napp-a-changelog 1 1042\napp-b-changelog 1 7\n"
    write_checkpoint(path, {})
    assert read_checkpoint(path) == {}


def test_missing_file_is_empty(tmp_path) -> None:
    assert read_checkpoint(tmp_path / "nope" / ".checkpoint") == {}
    delete_checkpoint(tmp_path / "nope" / ".checkpoint")  # no error


def test_atomic_replace_leaves_no_tmp_and_survives_stale_tmp(tmp_path) -> None:
    path = checkpoint_path(tmp_path)
    write_checkpoint(path, {("t", 0): 1})
    # a crash mid-write leaves a tmp file behind: it must not affect readers nor the next write
    (tmp_path / ".checkpoint.tmp").write_text("partial garb")
    assert read_checkpoint(path) == {("t", 0): 1}
    write_checkpoint(path, {("t", 0): 2})
    assert read_checkpoint(path) == {("t", 0): 2}
    assert sorted(os.listdir(tmp_path)) == [".checkpoint"]
    delete_checkpoint(path)
    assert not path.exists()


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"0\n",
        b"1\n0\n",  # unknown version
        b"0\n2\nt 0 1\n",  # count mismatch
        b"0\n1\nt 0\n",  # missing field
        b"0\n1\nt x 1\n",  # non-integer partition
        b"0\n1\nt 0 -5\n",  # negative offset
        b"\xff\xfe\x00garbage",
        b"zero\n1\nt 0 1\n",
    ],
)
def test_corrupt_checkpoint_detected(tmp_path, content: bytes) -> None:
    path = checkpoint_path(tmp_path)
    path.write_bytes(content)
    with pytest.raises(StateStoreError) as info:
        read_checkpoint(path)
    assert info.value.corrupt is True
    assert info.value.path == str(path)


def test_invalid_topic_rejected_on_write(tmp_path) -> None:
    with pytest.raises(StateStoreError):
        write_checkpoint(checkpoint_path(tmp_path), {("bad topic", 0): 1})
