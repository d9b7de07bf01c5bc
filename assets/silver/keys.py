"""Asset keys of the silver layer, in a module of their own.

The asset definitions, the writer that reports their materializations (``assets.silver.write``) and
gold (which depends on silver) all need them; here none of those has to import another for two names.
"""

from dagster import AssetKey


def silver_key(topic: str) -> AssetKey:
    return AssetKey(["silver", topic])


def quarantine_key(topic: str) -> AssetKey:
    """``quarantine/<topic>_quarantine``: a graph node named unlike the silver table it guards (the
    Delta table stays at ``<lake_root>/quarantine/<topic>``)."""
    return AssetKey(["quarantine", f"{topic}_quarantine"])
