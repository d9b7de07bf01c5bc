"""What both Delta write engines hand back and raise: the layer's own types, below either engine.

``assets.delta.writer`` (Parquet staging + deltalake commit) and ``assets.delta.native`` (Spark's
native Delta) return the same :class:`CommitResult`, honour the same :class:`AppTransaction` and
report a lost commit race with the same :class:`CommitConflictError` wording, so a caller cannot tell
(and need not care) which engine wrote. Keeping them here lets the engines share them without
importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass

from deltalake import DeltaTable

from assets.delta.errors import CommitConflictError
from assets.delta.location import TableLocation

#: Commit-metadata key of the id each write puts in its commit, to find that commit again after an
#: ambiguous outcome (a failed or skipped write).
COMMIT_ID_KEY = "streamhouse.commitId"


@dataclass(frozen=True)
class AppTransaction:
    """Idempotency token: (app_id, version) is recorded in the commit; re-running is a no-op."""

    app_id: str
    version: int


@dataclass(frozen=True)
class CommitResult:
    table_uri: str
    version: int
    skipped: bool
    files_added: int
    files_removed: int
    rows_written: int


def commit_conflict(location: TableLocation, read_version: int | None, exc: Exception) -> CommitConflictError:
    """The error for a write that lost the commit race: nothing of it is visible, and a retry is safe.

    Names the version the table is at now (None when even that cannot be read)."""
    try:
        current: int | None = DeltaTable(location.uri).version()
    except Exception:
        current = None
    return CommitConflictError(
        f"Commit to Delta table {location.uri} conflicted: it was read at version {read_version} but "
        f"version {current} was committed by another writer meanwhile. Nothing from this write is "
        f"visible; retry the write (app transactions make the retry safe). ({exc})",
        table_uri=location.uri,
        version=current,
    )
