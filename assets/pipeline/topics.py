"""The Kafka topics a pipeline declares, as the admin client creates them."""

from __future__ import annotations

from assets.pipeline.model import Pipeline
from edge.kafka import TopicSpec


def source_topic_specs(pipeline: Pipeline, prefix: str = "") -> list[TopicSpec]:
    """Every declared source as a topic to create when missing (``<prefix><name>``), with its declared
    partitions and replication factor (-1: the broker's ``default.replication.factor``)."""
    return [
        TopicSpec(f"{prefix}{name}", source.partitions, source.replication_factor)
        for name, source in pipeline.sources.items()
    ]
