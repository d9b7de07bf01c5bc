"""Task checkpoint file (Kafka Streams' ``.checkpoint``): changelog offsets the local state reflects.

Format (text, same as Kafka Streams' OffsetCheckpoint)::

    0                     <- version
    2                     <- number of entries
    app-store-changelog 3 1042
    app-other-changelog 3 7

The runtime writes it after a commit has reached the stores and on clean close, and reads it on start
to resume restoration from the stored offsets. Under exactly-once it is rewritten every 10,000
changelog records; it is deleted while processing only for a task with a custom persistent store that
writes as it processes (a crash then forces a full restore). Writes are atomic (tmp file + fsync +
rename + directory fsync), so a reader sees either the old or the new file; anything unparsable raises
``StateStoreError(corrupt=True)``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from edge.errors import StateStoreError

CHECKPOINT_FILE = ".checkpoint"
VERSION = 0


def checkpoint_path(task_dir: Path | str) -> Path:
    return Path(task_dir) / CHECKPOINT_FILE


def _corrupt(path: Path, why: str) -> StateStoreError:
    return StateStoreError(
        f"checkpoint file is corrupt ({why}); delete it (and the task's state) so the state is "
        f"restored from the changelog",
        path=str(path),
        corrupt=True,
    )


def read_checkpoint(path: Path | str) -> dict[tuple[str, int], int]:
    """Offsets by ``(topic, partition)``; ``{}`` if the file does not exist."""
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return {}
    except UnicodeDecodeError as exc:
        raise _corrupt(path, "not UTF-8 text") from exc
    except OSError as exc:
        raise _corrupt(path, f"unreadable: {exc}") from exc
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    try:
        version = int(lines[0])
        count = int(lines[1])
    except (IndexError, ValueError) as exc:
        raise _corrupt(path, "missing or invalid version/count header") from exc
    if version != VERSION:
        raise _corrupt(path, f"unsupported version {version}")
    body = lines[2:]
    if len(body) != count:
        raise _corrupt(path, f"header says {count} entries but found {len(body)}")
    offsets: dict[tuple[str, int], int] = {}
    for n, line in enumerate(body, start=3):
        parts = line.split(" ")
        if len(parts) != 3:
            raise _corrupt(path, f"line {n} is not 'topic partition offset': {line!r}")
        topic, partition, offset = parts
        try:
            p, o = int(partition), int(offset)
        except ValueError as exc:
            raise _corrupt(path, f"line {n} has a non-integer partition/offset: {line!r}") from exc
        if not topic or p < 0 or o < 0:
            raise _corrupt(path, f"line {n} has an invalid entry: {line!r}")
        offsets[(topic, p)] = o
    return offsets


def write_checkpoint(path: Path | str, offsets: Mapping[tuple[str, int], int]) -> None:
    """Atomically replace the checkpoint with ``offsets`` (an empty mapping writes an empty checkpoint)."""
    path = Path(path)
    lines = [str(VERSION), str(len(offsets))]
    for (topic, partition), offset in sorted(offsets.items()):
        if not topic or " " in topic or "\n" in topic:
            raise StateStoreError(f"invalid topic name for a checkpoint: {topic!r}", path=str(path))
        lines.append(f"{topic} {int(partition)} {int(offset)}")
    data = ("\n".join(lines) + "\n").encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def delete_checkpoint(path: Path | str) -> None:
    path = Path(path)
    try:
        path.unlink()
    except FileNotFoundError:
        return
    _fsync_dir(path.parent)


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
