"""Names that become paths, and deleting only what lies inside a directory the project owns.

An ``application.id`` names the consumer group, the internal topics and the app's directory under
``state.dir``. A reset deletes that directory recursively, so an id of ``..`` or ``/`` would delete the
state dir's parent or the root: ids follow Kafka's rule for the names they become (topic characters,
never ``.`` or ``..``), and every recursive delete checks that the resolved target lies strictly inside
the directory it belongs to (symlinks resolved first), whatever built the path.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterable
from pathlib import Path

from edge.errors import StreamhouseError

#: the characters Kafka allows in the topic names an application.id prefixes
_APPLICATION_ID = re.compile(r"^[a-zA-Z0-9._-]{1,200}$")


class InvalidApplicationIdError(StreamhouseError):
    """An ``application.id`` that cannot name a group, topics and a directory."""


class UnsafeDeletionError(StreamhouseError):
    """A recursive delete whose target does not resolve inside the directory it was meant for."""


def check_application_id(value: object) -> str:
    """``value`` when it is a legal ``application.id``; else an error saying the rule."""
    if not isinstance(value, str) or not _APPLICATION_ID.match(value) or value in (".", ".."):
        raise InvalidApplicationIdError(
            f"application.id {value!r} must be 1-200 characters of [a-zA-Z0-9._-] and not '.' or '..' "
            "(it names the consumer group, internal topics and the state directory)"
        )
    return value


def resolve_inside(path: Path | str, root: Path | str, *, what: str) -> Path:
    """``path`` resolved (symlinks followed), provided it lies strictly inside resolved ``root``."""
    target = Path(path).resolve()
    base = Path(root).resolve()
    if target == base or base not in target.parents:
        raise UnsafeDeletionError(
            f"refusing to delete {what} {path}: it resolves to {target}, which is not inside {base}"
        )
    return target


def remove_trees_inside(paths: Iterable[Path | str], root: Path | str, *, what: str) -> list[Path]:
    """Delete each of ``paths`` that exists, after checking every one of them (all or nothing refused)."""
    present = [Path(p) for p in paths if Path(p).exists() or Path(p).is_symlink()]
    for path in present:
        resolve_inside(path, root, what=what)
    return [path for path in present if remove_tree_inside(path, root, what=what)]


def remove_tree_inside(path: Path | str, root: Path | str, *, what: str, ignore_errors: bool = False) -> bool:
    """Delete ``path`` recursively if it exists and resolves strictly inside ``root``.

    A symlink is resolved first: its target must lie inside ``root`` too, and the link goes with it.
    ``ignore_errors`` ignores failures of the deletion itself (a half-written store), never the check.
    Returns whether anything was deleted.
    """
    link = Path(path)
    if not link.exists() and not link.is_symlink():
        return False
    target = resolve_inside(link, root, what=what)
    if target.exists():
        shutil.rmtree(target, ignore_errors=ignore_errors)
    if link.is_symlink():
        link.unlink(missing_ok=True)
    return True
