"""`CountingDataset`: the files a query reads are counted without Python in Arrow's I/O threads.

Counting through a Python filesystem handler deadlocked a CI run: an Arrow I/O thread held the scan's
lock while it waited for the GIL to open a file, and the thread starting the scan held the GIL while it
waited for that lock. The counting dataset records the files on the calling thread, from the fragments
the scan is given, and leaves the filesystem native.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq
from pyarrow import fs as pafs

from assets.lake.query import CountingDataset, ScanStats


def _days(root: Path) -> pads.FileSystemDataset:
    for day in range(3):
        folder = root / f"day={day}"
        folder.mkdir(parents=True)
        pq.write_table(pa.table({"x": list(range(day * 10, day * 10 + 10))}), folder / "f.parquet")
    return pads.dataset(root, partitioning="hive", filesystem=pafs.LocalFileSystem())


def test_a_scan_records_only_the_files_left_after_pruning(tmp_path: Path) -> None:
    stats = ScanStats()
    counting = CountingDataset.wrap(_days(tmp_path), "t", stats)
    table = counting.scanner(columns=["x"], filter=pads.field("day") == 1).to_table()
    assert sorted(table.column("x").to_pylist()) == list(range(10, 20))
    assert [Path(p).parent.name for p in stats.files["t"]] == ["day=1"]
    counting.scanner().to_table()
    assert stats.files_read == 3


def test_the_filesystem_stays_native(tmp_path: Path) -> None:
    counting = CountingDataset.wrap(_days(tmp_path), "t", ScanStats())
    assert not isinstance(counting.filesystem, pafs.PyFileSystem)
    assert isinstance(counting, pads.FileSystemDataset)  # DuckDB scans it as the Arrow dataset it is
