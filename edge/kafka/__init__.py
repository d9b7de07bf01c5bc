"""Kafka client plumbing shared by the edge runtime, the bronze ingestion and the tools."""

from edge.kafka.admin import TopicSpec, create_topics
from edge.kafka.profile import BrokerProfile, KafkaClientConfig

__all__ = ["BrokerProfile", "KafkaClientConfig", "TopicSpec", "create_topics"]
