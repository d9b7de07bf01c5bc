"""Mistakes an analyst can make when finding, describing or querying the lake's tables.

Each error says what was wrong and what would be right (the closest table names, the valid versions,
where in the SQL the problem is), so the CLI can print it as one `error: ...` and exit 2.
"""

from __future__ import annotations

from edge.errors import StreamhouseError


class LakeQueryError(StreamhouseError):
    """Base class for errors raised by `assets.lake`."""


class UnknownTableError(LakeQueryError):
    """A table name that is not a Delta table under the lake root."""

    def __init__(self, message: str, *, name: str, suggestions: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.name = name
        self.suggestions = suggestions


class UnknownColumnError(LakeQueryError):
    """The SQL names a column that none of its tables has."""

    def __init__(self, message: str, *, name: str, position: int | None = None) -> None:
        super().__init__(message)
        self.name = name
        self.position = position


class VersionOutOfRangeError(LakeQueryError):
    """A time-travel version or timestamp outside the table's retained history."""

    def __init__(self, message: str, *, table: str, first: int, latest: int) -> None:
        super().__init__(message)
        self.table = table
        self.first = first
        self.latest = latest


class SqlSyntaxError(LakeQueryError):
    """The SQL does not parse; `position` is the 0-based character offset in the SQL as written."""

    def __init__(self, message: str, *, position: int | None = None) -> None:
        super().__init__(message)
        self.position = position


class SqlError(LakeQueryError):
    """Any other error DuckDB reports for the SQL (wrong types, bad casts, unknown functions...)."""

    def __init__(self, message: str, *, position: int | None = None) -> None:
        super().__init__(message)
        self.position = position
