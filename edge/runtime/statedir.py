"""The instance's state directory: one process at a time (a lock file), and a stable instance id.

The instance id survives restarts (it is stored in ``state_dir/<application.id>/instance.id``) so a
restarted instance reuses its ``transactional.id`` and fences its previous incarnation.
"""

from __future__ import annotations

import fcntl
import os
import uuid
from pathlib import Path

from edge.errors import StreamhouseError


class StateDirLockedError(StreamhouseError):
    pass


def lock_state_dir(app_dir: Path, application_id: str) -> int:
    """Take the directory's lock (held until the returned fd is closed/unlocked)."""
    fd = os.open(app_dir / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise StateDirLockedError(
            f"state directory {app_dir} is in use by another instance of {application_id!r}; "
            "give each instance on this machine its own state.dir"
        ) from None
    return fd


def unlock_state_dir(fd: int) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def persisted_instance_id(app_dir: Path) -> str:
    path = app_dir / "instance.id"
    try:
        value = path.read_text().strip()
        if value:
            return value
    except FileNotFoundError:
        pass
    value = uuid.uuid4().hex[:12]
    path.write_text(value + "\n")
    return value
