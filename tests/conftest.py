"""Session-wide fixtures: one embedded broker and one Spark session for the whole suite."""

import os

# The suite's sample data and fixed dates are in 2026 (``assets.sample_data.DEFAULT_START``: 2026-01-05);
# unset, the daily partitions would start a week before today (``assets.partitions.default_start``) and
# drop those days. Set before any test module imports the asset definitions; subprocesses inherit it.
os.environ.setdefault("STREAMHOUSE_PARTITIONS_START", "2026-01-01")

pytest_plugins = ["tests.fixtures.kafka", "tests.fixtures.spark"]
