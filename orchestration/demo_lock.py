"""One ``streamhouse demo`` at a time per project: a lock file under ``state_dir``.

Two demos share the broker's topics, the lake, the edge apps' state and consumer groups; a second one
used to run for minutes and then fail at its edge step (the first held the edge apps' state
directories). Now it fails at once, naming the running one: ``another streamhouse demo is running (pid
N, since T)``.

The file (``state_dir/demo.lock``) holds the owner's pid and start time, and is ``flock``-ed while the
demo runs: the kernel releases that lock when the process ends however it ends, so a file left by a
killed demo is stale, detected by taking the lock, and taken over (never a pid compared with a reused
one). The owner deletes it at exit.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from edge.errors import StreamhouseError

LOCK_FILE = "demo.lock"


class DemoRunningError(StreamhouseError):
    """Another demo holds the lock."""


def _holder(path: Path) -> str:
    """``pid N, since T`` from the lock file (what the other demo wrote), as far as it is readable."""
    try:
        data = json.loads(path.read_text() or "{}")
    except (OSError, ValueError):
        data = {}
    return f"pid {data.get('pid', '?')}, since {data.get('since', '?')}"


@contextmanager
def demo_lock(state_dir: Path) -> Iterator[Path]:
    """Hold the demo lock for the ``with`` block; :class:`DemoRunningError` at once if another demo
    holds it."""
    state_dir.mkdir(parents=True, exist_ok=True)
    path = state_dir / LOCK_FILE
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise DemoRunningError(
                f"another streamhouse demo is running ({_holder(path)}); wait for it to finish "
                f"or stop it (lock: {path})"
            ) from None
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)  # the previous owner removed the file between our open and our lock: again
    try:
        since = datetime.now(UTC).isoformat(timespec="seconds")
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps({"pid": os.getpid(), "since": since}).encode())
        yield path
    finally:
        try:
            path.unlink()
        except FileNotFoundError:
            pass
        os.close(fd)
