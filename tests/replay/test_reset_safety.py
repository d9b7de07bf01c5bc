"""Resets delete only what they own: an application.id is never a path, nothing outside its directory goes.

The first test is the reported reproduction: ``replay edge --application-id ..`` deleted the state dir's
parent (by default ``.state``: the lake, the Dagster instance, the broker record).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from edge.paths import (
    InvalidApplicationIdError,
    UnsafeDeletionError,
    check_application_id,
    remove_tree_inside,
)
from edge.runtime.config import StreamsConfig, StreamsConfigError
from edge.tools import ResetTarget, plan_reset
from tests.replay.apps import wordcount

ROOT = Path(__file__).resolve().parents[2]


def _streamhouse(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orchestration.cli.main", *args],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def _victim(tmp_path: Path) -> tuple[Path, Path]:
    """``x/victim/streams`` as the state dir, with a canary in its parent."""
    streams = tmp_path / "x" / "victim" / "streams"
    streams.mkdir(parents=True)
    canary = tmp_path / "x" / "victim" / "canary.txt"
    canary.write_text("alive\n")
    return streams, canary


@pytest.mark.parametrize("bad", ["..", ".", "/", "a/b", "../victim", "", "x" * 201, "tab\there"])
def test_application_ids_that_are_paths_are_refused(bad):
    with pytest.raises(InvalidApplicationIdError, match="must be 1-200 characters"):
        check_application_id(bad)
    with pytest.raises(StreamsConfigError, match=re.escape("not '.' or '..'")):
        StreamsConfig(application_id=bad, bootstrap_servers="127.0.0.1:9092")


def test_legal_application_ids_pass():
    for good in ("wordcount", "app.v2", "my_app-1", "a" * 200, "..."):
        assert check_application_id(good) == good


def test_remove_tree_inside_refuses_the_root_its_parent_and_links_out(tmp_path):
    root = tmp_path / "state"
    (root / "app" / "sub").mkdir(parents=True)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    (root / "link").symlink_to(outside)

    for path in (root, root / "..", tmp_path, root / "link", root / "app" / ".." / ".."):
        with pytest.raises(UnsafeDeletionError, match="not inside"):
            remove_tree_inside(path, root, what="test dir")
    assert (outside / "keep.txt").read_text() == "keep" and (root / "app" / "sub").is_dir()

    assert remove_tree_inside(root / "app", root, what="test dir") is True
    assert not (root / "app").exists() and root.is_dir()
    assert remove_tree_inside(root / "app", root, what="test dir") is False


def test_a_link_inside_the_root_goes_with_its_target(tmp_path):
    root = tmp_path / "state"
    (root / "real").mkdir(parents=True)
    (root / "real" / "f").write_text("x")
    (root / "alias").symlink_to(root / "real")
    assert remove_tree_inside(root / "alias", root, what="test dir")
    assert not (root / "alias").is_symlink() and not (root / "real").exists()


def test_replay_edge_with_dotdot_deletes_nothing(kafka_broker, make_topic, tmp_path):
    """An application id that is a path (``..``, ``/``, a directory) must never make ``replay edge`` or
    ``edge run`` delete outside the state dir: through the installed CLI, exit 2, one error line, and
    the canary beside the state dir lives."""
    streams, canary = _victim(tmp_path)
    env = {
        "STREAMHOUSE_STATE_DIR": str(tmp_path / "x"),
        "STREAMHOUSE_BROKER_PROFILE": kafka_broker.profile.value,
        "REPLAY_IN": make_topic("lines", 1),
        "REPLAY_OUT": make_topic("counts", 1),
    }
    base = ["replay", "edge", "tests.replay.apps:wordcount", "--to-earliest"]
    base += ["--bootstrap-servers", kafka_broker.bootstrap_servers, "--state-dir", str(streams)]
    for bad in ("..", "/", str(tmp_path / "x" / "victim")):
        done = _streamhouse(*base, "--application-id", bad, env=env)
        assert done.returncode == 2, done.stderr
        assert done.stderr.strip().splitlines()[-1].startswith("error: application.id")
        assert "Traceback" not in done.stderr
        assert canary.read_text() == "alive\n" and streams.is_dir()
    ran = _streamhouse(
        "edge", "run", "tests.replay.apps:wordcount", "--application-id", "..",
        "--bootstrap-servers", kafka_broker.bootstrap_servers, "--state-dir", str(streams), env=env,
    )  # fmt: skip
    assert ran.returncode == 2 and "error: application.id '..'" in ran.stderr, ran.stderr
    assert canary.exists()


def test_a_state_dir_linked_out_of_the_state_dir_is_refused_when_planning(kafka_broker, make_topic, tmp_path):
    streams = tmp_path / "streams"
    streams.mkdir()
    outside = tmp_path / "precious"
    outside.mkdir()
    (outside / "data").write_text("keep")
    (streams / "wc").symlink_to(outside)
    src, out = make_topic("lines", 1), make_topic("counts", 1)
    with pytest.raises(UnsafeDeletionError, match="not inside"):
        plan_reset(
            kafka_broker, "wc", ResetTarget.earliest(), topology=wordcount(src, out), state_dir=streams
        )
    assert (outside / "data").read_text() == "keep"


def test_demo_reset_refuses_a_table_directory_linked_out_of_the_lake(tmp_path, monkeypatch):
    from orchestration.demo import reset_demo
    from orchestration.settings import load_settings

    lake = tmp_path / "lake"
    (lake / "bronze" / "orders").mkdir(parents=True)
    outside = tmp_path / "other-lake-gold"
    outside.mkdir()
    (outside / "part-0.parquet").write_text("keep")
    (lake / "gold").symlink_to(outside)
    monkeypatch.setenv("STREAMHOUSE_LAKE_ROOT", str(lake))
    monkeypatch.setenv("STREAMHOUSE_STATE_DIR", str(tmp_path / "state"))
    with pytest.raises(UnsafeDeletionError, match="not inside"):
        reset_demo(load_settings(), instance=None, prefix="")
    # refused before anything went: the bronze tables checked first are still there
    assert (outside / "part-0.parquet").read_text() == "keep" and (lake / "bronze" / "orders").is_dir()


def test_state_cleanup_never_follows_a_link_out_of_the_task_directory(tmp_path):
    """A corrupt store or task state is wiped before a restore: through a symlink it would have wiped
    whatever the link points at (RocksDB's destroy follows links)."""
    from edge.runtime.tasks import wipe_task_state
    from edge.state.rocksdb import destroy_store_dir

    outside = tmp_path / "precious"
    outside.mkdir()
    (outside / "CURRENT").write_text("keep")
    task = tmp_path / "state" / "app" / "0_0"
    (task / "rocksdb").mkdir(parents=True)
    (task / "rocksdb" / "counts").symlink_to(outside)
    with pytest.raises(UnsafeDeletionError):
        destroy_store_dir(task / "rocksdb" / "counts")
    (task / "rocksdb" / "counts").unlink()
    (task / "rocksdb").rmdir()
    (task / "rocksdb").symlink_to(outside)
    with pytest.raises(UnsafeDeletionError):
        wipe_task_state(task)
    assert (outside / "CURRENT").read_text() == "keep"

    (task / "rocksdb").unlink()
    (task / "rocksdb" / "counts").mkdir(parents=True)
    wipe_task_state(task)
    assert not (task / "rocksdb").exists() and task.is_dir()
