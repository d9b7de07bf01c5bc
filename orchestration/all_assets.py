"""Every asset definition of the lakehouse, in one list: the code location and the replay job use it.

One lineage graph: Kafka topics → edge apps → their output topics → bronze → silver → gold, plus
maintenance. It is its own module (not part of ``orchestration.definitions``) so that the replay job
can rebuild with the same assets without importing the code location, which lists the replay job.
"""

from __future__ import annotations

from assets.bronze.assets import BRONZE_ASSETS
from assets.edge_apps.assets import EDGE_APP_ASSETS
from assets.gold.assets import GOLD_ASSETS
from assets.kafka.assets import TOPIC_ASSETS
from assets.maintenance import lake_maintenance
from assets.silver.assets import DIMENSION_ASSETS, SILVER_ASSETS

ALL_ASSETS = [
    *TOPIC_ASSETS,
    *EDGE_APP_ASSETS,
    *BRONZE_ASSETS,
    *DIMENSION_ASSETS,
    *SILVER_ASSETS,
    *GOLD_ASSETS,
    lake_maintenance,
]
