"""Asset keys of Kafka topics and edge apps: ``kafka/<topic>`` and ``edge/<application_id>``.

In a module of their own so bronze (which depends on topic assets) and the topic assets (which depend
on the edge apps) can name each other without importing each other's definitions.
"""

from __future__ import annotations

import re

from dagster import AssetKey


def topic_key(topic: str) -> AssetKey:
    """The asset of a Kafka topic, by its logical name (``KafkaResource.topic_prefix`` not included)."""
    return AssetKey(["kafka", topic])


def edge_app_key(application_id: str) -> AssetKey:
    return AssetKey(["edge", application_id])


def op_name(kind: str, name: str) -> str:
    """A Dagster op name for a topic's or an app's observation: names allow ``[A-Za-z0-9_]`` only,
    while topics and application ids often hold ``-`` and ``.``."""
    return f"{kind}__{re.sub(r'[^A-Za-z0-9_]', '_', name)}"
