"""What changed in a Delta table's partitions between two versions, from the file lists alone.

Delta data files are immutable, so a partition whose file set is the same at versions ``a`` and ``b``
holds the same rows at both, and the files in ``b`` but not in ``a`` are exactly the rows appended in
between (as long as none of ``a``'s files were removed). Incremental runs use this to read only new
bronze files and to skip gold days whose inputs did not change; no change data feed is needed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from deltalake import DeltaTable

from assets.delta.errors import TableNotFoundError
from assets.delta.location import TableLocation, resolve
from assets.delta.snapshot import ActiveFile, active_files, open_table, partition_columns, schema_json

#: The partition key of an unpartitioned table (the whole table is one partition).
WHOLE_TABLE = ""


@dataclass
class PartitionFiles:
    """One table pinned at ``version``: its files per partition, and older snapshots on demand."""

    location: TableLocation
    version: int
    column: str | None
    table_id: str
    schema: dict
    partition_columns: list[str]
    files: dict[str, list[ActiveFile]]
    _older: dict[int, dict[str, set[str]] | None] = field(default_factory=dict)

    @classmethod
    def load(cls, table_uri: str, version: int, column: str | None) -> PartitionFiles:
        location = resolve(table_uri)
        table = open_table(location, version=version)
        return cls(
            location,
            version,
            column,
            table.metadata().id,
            schema_json(table),
            partition_columns(table),
            _by_partition(active_files(table), column),
        )

    def of(self, keys: Iterable[str]) -> list[ActiveFile]:
        return [f for key in keys for f in self.files.get(key, [])]

    def paths_at(self, version: int) -> dict[str, set[str]] | None:
        """File paths per partition at an older ``version`` (None once it left the retained log)."""
        if version not in self._older:
            try:
                table = open_table(self.location, version=version)
            except TableNotFoundError:
                self._older[version] = None
            else:
                by_key = _by_partition(active_files(table), self.column)
                self._older[version] = {k: {f.rel_path for f in fs} for k, fs in by_key.items()}
        return self._older[version]

    def added_since(self, version: int, key: str) -> list[ActiveFile] | None:
        """Files of partition ``key`` appended after ``version``; None when that cannot be told
        (files of ``version`` were removed since, e.g. by compaction, or its snapshot is gone)."""
        before = self.paths_at(version)
        if before is None:
            return None
        current = self.files.get(key, [])
        old = before.get(key, set())
        if not old <= {f.rel_path for f in current}:
            return None
        return [f for f in current if f.rel_path not in old]

    def unchanged_since(self, version: int, keys: Iterable[str]) -> bool:
        """True when every partition in ``keys`` has exactly the files it had at ``version``."""
        if version == self.version:
            return True
        before = self.paths_at(version)
        if before is None:
            return False
        return all(before.get(k, set()) == {f.rel_path for f in self.files.get(k, [])} for k in keys)


def record_count(files: Iterable[ActiveFile]) -> int | None:
    """Rows in ``files`` from the log's statistics (None when a file has no count)."""
    counts = [f.num_records for f in files]
    return None if any(c is None for c in counts) else sum(c for c in counts if c is not None)


def open_latest(table_uri: str) -> DeltaTable | None:
    """The table's latest snapshot (None when it does not exist yet)."""
    location = resolve(table_uri)
    return DeltaTable(location.uri) if DeltaTable.is_deltatable(location.uri) else None


def _by_partition(files: list[ActiveFile], column: str | None) -> dict[str, list[ActiveFile]]:
    out: dict[str, list[ActiveFile]] = {}
    for f in files:
        key = WHOLE_TABLE if column is None else (f.partition_values.get(column) or "")
        out.setdefault(key, []).append(f)
    return out
