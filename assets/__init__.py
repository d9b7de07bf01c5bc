"""The lakehouse's Dagster assets.

Our definitions use two Dagster parameters marked beta (``backfill_policy`` on the daily assets,
``allow_nonexistent_upstream_partitions`` on gold's partition mappings), knowingly: Dagster warns about
each use on every import, 8 lines on the console of ``make dagster``, ``streamhouse demo`` and every
run. Silenced here, where they are used, for exactly those parameters (by message, so this package
does not import Dagster for it); any other beta API still warns.
"""

import warnings

warnings.filterwarnings(
    "ignore",
    message=r"Parameter `(backfill_policy|allow_nonexistent_upstream_partitions)` of .* is currently in beta",
)
