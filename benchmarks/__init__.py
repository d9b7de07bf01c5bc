"""Benchmarks of the edge and the lakehouse (``make bench``).

They run on the sample data's fixed dates (``assets.sample_data.DEFAULT_START``, 2026-01-05 on), so the
daily partitions start before them, as the test suite's do: unset, ``partitions_start`` would be a week
before today (``assets.partitions.default_start``) and leave those days out. Set here, before any
benchmark imports the asset definitions; its subprocesses inherit it.
"""

import os

os.environ.setdefault("STREAMHOUSE_PARTITIONS_START", "2026-01-01")
