"""Who answers for the platform's assets: every asset in the graph carries these owners.

One constant rather than a setting: ownership is part of the code's contract (the Dagster UI filters
and alerts on it), not something a deployment changes.
"""

from __future__ import annotations

#: Dagster owners (``team:<name>`` or an e-mail address) of every Streamhouse asset.
OWNERS: list[str] = ["team:data-platform"]


def owners_of(*declared: list[str]) -> list[str]:
    """The first non-empty owner list a declaration gives (a table's, then its pipeline's), else
    ``OWNERS``."""
    return next((list(o) for o in declared if o), OWNERS)
