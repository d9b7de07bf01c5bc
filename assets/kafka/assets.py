"""Every Kafka topic the project reads or writes, as an observed asset in the lineage graph.

Dagster does not write these topics (producers and edge apps do), so they are observable source
assets: an observation records each topic's end offsets, record count and the lag of every consumer
group reading it, and its data version is the sum of the end offsets, so once an observation (the
observe job, or the lag sensor when it starts ingestion) finds new records the UI can show bronze as
behind its topic. An edge app's output topic depends on the app, so the graph reads input topic →
edge app → output topic → bronze → silver → gold.
"""

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
    TableRecord,
    TableSchema,
    multi_observable_source_asset,
)

from assets.edge_apps.registry import EDGE_APPS
from assets.kafka.keys import edge_app_key, op_name, topic_key
from assets.kafka.offsets import TopicOffsets, consumer_lag, topic_offsets
from assets.owners import OWNERS
from assets.pipeline.active import active_pipeline
from assets.resources import KafkaResource

KAFKA_GROUP = "kafka"
PARTITIONS_SCHEMA = TableSchema.from_name_type_dict(
    {"partition": "int", "beginning": "int", "end": "int", "records": "int"}
)


def project_topics() -> list[str]:
    """Topics bronze ingests and topics the edge apps read or write, each once."""
    topics = list(active_pipeline().sources)
    for app in EDGE_APPS:
        topics += [t for t in (*app.input_topics, *app.output_topics) if t not in topics]
    return topics


def writers(topic: str) -> list[str]:
    """Edge apps that write ``topic``."""
    return [app.application_id for app in EDGE_APPS if topic in app.output_topics]


def topic_spec(topic: str) -> AssetSpec:
    apps = writers(topic)
    readers = [a.application_id for a in EDGE_APPS if topic in a.input_topics]
    written = f"written by edge app(s) {', '.join(apps)}" if apps else "written by the producers"
    read = f"; read by edge app(s) {', '.join(readers)}" if readers else ""
    return AssetSpec(
        topic_key(topic),
        deps=[edge_app_key(a) for a in apps],
        group_name=KAFKA_GROUP,
        kinds={"kafka"},
        owners=OWNERS,
        description=f"Kafka topic `{topic}`, {written}{read}. Observed: end offsets, records, lag per group.",
    )


def topic_metadata(
    off: TopicOffsets, lag: dict[str, int] | None = None, lag_error: str = ""
) -> dict[str, object]:
    """What an observation of one topic records (the lag sensor records it too, without group lag).

    ``off.topic`` is the physical name (with ``KafkaResource.topic_prefix``).
    """
    meta: dict[str, object] = {
        "topic": MetadataValue.text(off.topic),
        "exists": MetadataValue.bool(off.exists),
    }
    if off.exists:
        meta |= {
            "partitions": MetadataValue.int(off.partitions),
            "records": MetadataValue.int(off.records),
            "dagster/row_count": MetadataValue.int(off.records),
            "end_offsets": MetadataValue.json({str(p): e for p, e in off.end.items()}),
            "offsets": MetadataValue.table(
                [
                    TableRecord(
                        {
                            "partition": p,
                            "beginning": off.beginning.get(p, 0),
                            "end": e,
                            "records": max(0, e - off.beginning.get(p, 0)),
                        }
                    )
                    for p, e in off.end.items()
                ],
                schema=PARTITIONS_SCHEMA,
            ),
        }
    if lag is not None:
        meta["consumer_lag"] = MetadataValue.json(dict(sorted(lag.items())))
    if lag_error:
        meta["consumer_lag_error"] = MetadataValue.text(lag_error)
    return meta


def topic_data_version(off: TopicOffsets) -> DataVersion:
    """Sum of the end offsets: changes exactly when records are appended."""
    return DataVersion(str(off.end_total)) if off.exists else DataVersion("missing")


def build_topic_asset(topic: str) -> AssetsDefinition:
    """One observable asset per topic: an edge app sits between its input and output topics in the
    graph, so one op observing every topic would depend on the apps' op and they on it (a cycle)."""
    with warnings.catch_warnings():  # beta in Dagster 1.13; the API this module relies on is stable
        warnings.simplefilter("ignore", BetaWarning)
        observable = multi_observable_source_asset(
            name=op_name("kafka", topic),
            specs=[topic_spec(topic)],
            description=f"End offsets, record count and consumer lag of `{topic}`.",
        )

    def _observe(context: AssetExecutionContext, kafka: KafkaResource) -> Iterator[ObserveResult]:
        client = kafka.client()
        physical = kafka.topic(topic)
        off = topic_offsets(client, [physical])[physical]
        lag: dict[str, dict[str, int]] = {}
        lag_error = ""
        try:
            lag = consumer_lag(client, {physical: off})
        except Exception as exc:  # offsets are still worth recording
            lag_error = f"consumer groups not listed: {exc}"
            context.log.warning(lag_error)
        yield ObserveResult(
            asset_key=topic_key(topic),
            metadata=topic_metadata(off, lag.get(physical, {}), lag_error),  # type: ignore[arg-type]
            data_version=topic_data_version(off),
        )

    return observable(_observe)


KAFKA_TOPICS = project_topics()
TOPIC_ASSETS = [build_topic_asset(t) for t in KAFKA_TOPICS]
