"""Exactly-once keeps a task's checkpoint while it runs: when it is rewritten, and for which tasks."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from edge.processor.task import StreamTask
from edge.runtime.tasks import ActiveTask
from edge.state.checkpoint import checkpoint_path, read_checkpoint

LOG = ("app-counts-changelog", 0)
OTHER = ("app-other-changelog", 0)


def _task(tmp_path: Path) -> ActiveTask:
    return ActiveTask((0, 0), None, tmp_path, {"counts": LOG[0]})  # type: ignore[arg-type]


def test_the_first_commit_writes_then_only_every_threshold_records(tmp_path: Path) -> None:
    t = _task(tmp_path)
    t.offsets[LOG] = 5
    assert t.write_checkpoint_if_due(100)  # none written since the task opened
    assert read_checkpoint(checkpoint_path(tmp_path)) == {LOG: 5}
    t.offsets[LOG] = 105
    assert not t.write_checkpoint_if_due(100)  # moved 100: not more than the threshold
    assert read_checkpoint(checkpoint_path(tmp_path)) == {LOG: 5}
    t.offsets[LOG] = 106
    assert t.write_checkpoint_if_due(100)
    assert read_checkpoint(checkpoint_path(tmp_path)) == {LOG: 106}


def test_a_changelog_partition_missing_from_the_checkpoint_makes_it_due(tmp_path: Path) -> None:
    t = _task(tmp_path)
    assert t.write_checkpoint_if_due(100)  # nothing written yet: an empty checkpoint
    assert read_checkpoint(checkpoint_path(tmp_path)) == {}
    t.offsets[LOG] = 0  # the first changelog record: a restore must not start from offset 0 again
    assert t.write_checkpoint_if_due(100)
    t.offsets[OTHER] = 3
    assert t.write_checkpoint_if_due(100)
    assert read_checkpoint(checkpoint_path(tmp_path)) == {LOG: 0, OTHER: 3}


def _fake_stream_task(*layers: object) -> StreamTask:
    task = StreamTask.__new__(StreamTask)
    task.stores = {f"s{i}": layer for i, layer in enumerate(layers)}  # type: ignore[attr-defined]
    return task


def test_a_persistent_store_that_writes_as_it_processes_keeps_no_checkpoint_while_running() -> None:
    deferring = SimpleNamespace(persistent=True, defer_writes=True, wrapped=None)
    in_memory = SimpleNamespace(persistent=False, wrapped=None)
    custom = SimpleNamespace(persistent=True, wrapped=None)  # a Processor API store without deferral
    assert _fake_stream_task(deferring, in_memory).stores_hold_committed_state_only()
    assert not _fake_stream_task(deferring, custom).stores_hold_committed_state_only()
    layered = SimpleNamespace(persistent=True, wrapped=SimpleNamespace(persistent=True, defer_writes=False))
    assert not _fake_stream_task(layered).stores_hold_committed_state_only()
