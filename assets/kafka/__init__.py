"""Kafka topics as observed assets: end offsets, record counts and consumer lag per group."""

from assets.kafka.keys import edge_app_key, topic_key

__all__ = ["edge_app_key", "topic_key"]
