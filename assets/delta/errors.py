"""Errors a caller of the Delta layer can cause.

Every error names the table (and version where one is involved) and says what to do about it, so an
asset failure in Dagster reads as an instruction rather than a delta-rs stack trace.
"""

from __future__ import annotations

from edge.errors import StreamhouseError  # the project-wide base, shared with edge and orchestration


class DeltaLayerError(StreamhouseError):
    """Base class for errors raised by `assets.delta`; carries the table it concerns."""

    def __init__(self, message: str, *, table_uri: str | None = None, version: int | None = None) -> None:
        super().__init__(message)
        self.table_uri = table_uri
        self.version = version


class TableNotFoundError(DeltaLayerError):
    """The table does not exist (or the requested version/timestamp is outside its history)."""


class PartitionFilterError(DeltaLayerError):
    """An `overwrite_where` predicate names non-partition columns or the data falls outside it."""


class SchemaMismatchError(DeltaLayerError):
    """The DataFrame's schema is incompatible with the table's schema."""

    def __init__(
        self,
        message: str,
        *,
        table_uri: str | None = None,
        version: int | None = None,
        columns: tuple[str, ...] = (),
    ) -> None:
        super().__init__(message, table_uri=table_uri, version=version)
        self.columns = columns


class CommitConflictError(DeltaLayerError):
    """Another writer committed a conflicting version after we read the table; the write must be retried."""


class WriteOptionsError(DeltaLayerError):
    """The combination of options passed to `write_delta` is invalid."""
