"""assets.delta.changes: appended files are told apart from the file lists alone; rewritten ones are not."""

from __future__ import annotations

import pyarrow as pa

from assets.delta import optimize, table_version, write_delta_arrow
from assets.delta.changes import WHOLE_TABLE, PartitionFiles, open_latest

SCHEMA = pa.schema([("id", pa.int64()), ("day", pa.string())])


def _append(uri: str, ids: list[int], day: str) -> int:
    write_delta_arrow(
        pa.table({"id": ids, "day": [day] * len(ids)}, schema=SCHEMA), uri, partition_by=["day"]
    )
    return table_version(uri)


def test_added_since_unchanged_since_and_compaction(tmp_lake) -> None:
    uri = str(tmp_lake / "events")
    assert open_latest(uri) is None
    v0 = _append(uri, [1, 2], "d1")
    _append(uri, [3], "d2")
    v2 = _append(uri, [4], "d2")

    files = PartitionFiles.load(uri, v2, "day")
    assert len(files.of(["d1", "d2"])) == 3
    new = files.added_since(v0, "d2")
    assert new is not None and len(new) == 2  # both d2 files came after v0
    assert files.added_since(v0, "d1") == []
    assert files.unchanged_since(v0, ["d1"]) and not files.unchanged_since(v0, ["d2"])
    assert files.unchanged_since(v2, ["d1", "d2"])
    # A version the log never had cannot be compared: the caller must rescan.
    assert files.added_since(v2 + 5, "d1") is None and not files.unchanged_since(v2 + 5, ["d1"])

    optimize(uri)  # rewrites d2's two small files into one: same rows, different files
    compacted = PartitionFiles.load(uri, table_version(uri), "day")
    assert compacted.added_since(v2, "d2") is None
    assert not compacted.unchanged_since(v2, ["d2"]) and compacted.unchanged_since(v2, ["d1"])


def test_unpartitioned_table_is_one_partition(tmp_lake) -> None:
    uri = str(tmp_lake / "dim")
    write_delta_arrow(pa.table({"id": [1]}), uri)
    v0 = table_version(uri)
    write_delta_arrow(pa.table({"id": [2]}), uri)
    files = PartitionFiles.load(uri, table_version(uri), None)
    assert list(files.files) == [WHOLE_TABLE]
    assert not files.unchanged_since(v0, [WHOLE_TABLE])
    assert files.table_id == open_latest(uri).metadata().id
