"""Every edge app as an observed asset: its topology, state stores, guarantee and live metrics.

The apps run outside Dagster (``streamhouse edge run``), so Dagster observes them rather than
materializing them. What does not need the running app comes from the topology built in-process
(``describe()``, stores, changelog and repartition topics); the live part comes from the app's
``/metrics`` when it answers at its registered server, and the metadata says so when it does not.
Inputs are the app's input topics; its output topics depend on it (``assets/kafka/assets.py``).
"""

import hashlib
import warnings
from collections.abc import Iterator

from dagster import (
    AssetExecutionContext,
    AssetsDefinition,
    AssetSpec,
    BetaWarning,
    DataVersion,
    MetadataValue,
    ObserveResult,
    multi_observable_source_asset,
)

from assets.edge_apps.metrics import LiveMetrics, fetch
from assets.edge_apps.registry import EDGE_APPS, EdgeApp
from assets.kafka.keys import edge_app_key, op_name, topic_key
from assets.owners import OWNERS

EDGE_GROUP = "edge"
#: /metrics families shown in the metadata, by their name without ``streamhouse_edge_``.
LIVE_FIGURES = (
    "records_processed_total",
    "records_per_second",
    "process_latency_seconds_avg",
    "commits_total",
    "consumer_lag",
)


def edge_app_spec(app: EdgeApp) -> AssetSpec:
    return AssetSpec(
        edge_app_key(app.application_id),
        deps=[topic_key(t) for t in app.input_topics],
        group_name=EDGE_GROUP,
        kinds={"kafka", "python"},
        owners=OWNERS,
        description=(
            f"{app.description} Edge app `{app.target}` (application.id `{app.application_id}`), "
            "observed: topology, state stores, guarantee and live /metrics."
        ).strip(),
        metadata={"application_id": app.application_id, "target": app.target},
    )


def static_metadata(app: EdgeApp) -> dict[str, object]:
    """What the topology says, with no app running."""
    return {
        "application_id": MetadataValue.text(app.application_id),
        "target": MetadataValue.text(app.target),
        "guarantee": MetadataValue.text(app.guarantee),
        "server": MetadataValue.text(app.server),
        "input_topics": MetadataValue.json(app.input_topics),
        "output_topics": MetadataValue.json(app.output_topics),
        "state_stores": MetadataValue.json(app.stores),
        "changelog_topics": MetadataValue.json(app.changelog_topics),
        "repartition_topics": MetadataValue.json(app.repartition_topics),
        "topology": MetadataValue.md(f"```\n{app.describe()}\n```"),
    }


def live_metadata(live: LiveMetrics) -> dict[str, object]:
    meta: dict[str, object] = {
        "metrics_url": MetadataValue.url(live.url),
        "running": MetadataValue.bool(live.reachable),
    }
    if not live.reachable:
        meta["status"] = MetadataValue.text(live.error)
        return meta
    meta["status"] = MetadataValue.text(", ".join(sorted(set(live.states))) or "unknown")
    for name in LIVE_FIGURES:
        if name in live.totals:
            meta[name] = MetadataValue.float(round(live.totals[name], 6))
    return meta


def topology_version(app: EdgeApp) -> DataVersion:
    """Changes when the topology changes (new code deployed), not with every processed record."""
    return DataVersion(hashlib.sha256(app.describe().encode()).hexdigest()[:16])


def build_edge_app_asset(app: EdgeApp) -> AssetsDefinition:
    """One observable asset (and op) per app, so apps chained through a topic form no op cycle."""
    key = edge_app_key(app.application_id)
    with warnings.catch_warnings():  # beta in Dagster 1.13; the API this module relies on is stable
        warnings.simplefilter("ignore", BetaWarning)
        observable = multi_observable_source_asset(
            name=op_name("edge", app.application_id),
            specs=[edge_app_spec(app)],
            description=f"Topology, state stores, guarantee and live /metrics of `{app.application_id}`.",
        )

    def _observe(context: AssetExecutionContext) -> Iterator[ObserveResult]:
        live = fetch(app.server)
        if not live.reachable:
            context.log.info(f"edge app {app.application_id}: {live.error}")
        yield ObserveResult(
            asset_key=key,
            metadata={**static_metadata(app), **live_metadata(live)},  # type: ignore[arg-type]
            data_version=topology_version(app),
        )

    return observable(_observe)


EDGE_APP_ASSETS = [build_edge_app_asset(a) for a in EDGE_APPS]
