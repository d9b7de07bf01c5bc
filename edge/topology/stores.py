"""Store declarations made by the DSL before serdes are known.

The DSL often does not know a store's serdes (the user named none and the defaults live in the
runtime config), so it declares a :class:`StoreSpec`; the task turns it into the state package's
``StoreBuilder`` once the config is known. Processor API users pass a ready ``StoreBuilder`` instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from edge.serde import Serde, ValueAndTimestampSerde
from edge.state import key_value_store_builder
from edge.state.window import (
    ADDITIONAL_CHANGELOG_RETENTION_MS,
    session_store_builder,
    window_store_builder,
    windowed_changelog_config,
)

if TYPE_CHECKING:
    from edge.processor.config import StreamsConfig
    from edge.state import StoreBuilder


@dataclass(slots=True)
class StoreSpec:
    name: str
    key_serde: Serde | None = None
    value_serde: Serde | None = None
    persistent: bool = True
    logging_enabled: bool = True
    caching_enabled: bool = True
    timestamped: bool = True
    changelog_config: dict[str, str] | None = None
    #: "key_value", "window" (Kafka's timestamped window store unless ``timestamped`` is False) or
    #: "session" (values are never timestamped, as in Kafka)
    kind: str = "key_value"
    window_size_ms: int = 0
    retention_ms: int = 0
    retain_duplicates: bool = False
    #: versioned stores only (kind "versioned", ``retention_ms`` = history retention); None = Kafka's default
    segment_interval_ms: int | None = None
    #: window stores only: Kafka's time-ordered store (an ON_WINDOW_CLOSE aggregation's), whose windows
    #: expire at ``start < stream time - retention`` instead of the key-first ``+ 1`` bound
    time_ordered: bool = False

    def to_builder(self, config: StreamsConfig) -> StoreBuilder:
        value_serde = self.value_serde or config.default_value_serde
        key_serde = self.key_serde or config.default_key_serde
        if self.kind == "versioned":
            from edge.state.versioned import VersionedKeyValueStoreBuilder

            return VersionedKeyValueStoreBuilder(  # type: ignore[return-value]
                self.name,
                key_serde,
                value_serde,
                self.retention_ms,
                self.segment_interval_ms,
                self.persistent,
                self.logging_enabled,
                dict(self.changelog_config or {}),
            )
        if self.kind == "session":
            return session_store_builder(  # type: ignore[return-value]
                self.name,
                key_serde,
                value_serde,
                retention_ms=self.retention_ms,
                persistent=self.persistent,
                logging=self.logging_enabled,
                caching=self.caching_enabled,
                changelog_config=self.changelog_config,
            )
        if self.timestamped:
            value_serde = ValueAndTimestampSerde(value_serde)
        if self.kind == "window":
            return window_store_builder(  # type: ignore[return-value]
                self.name,
                key_serde,
                value_serde,
                window_size_ms=self.window_size_ms,
                retention_ms=self.retention_ms,
                retain_duplicates=self.retain_duplicates,
                persistent=self.persistent,
                logging=self.logging_enabled,
                caching=self.caching_enabled,
                changelog_config=self.changelog_config,
                time_ordered=self.time_ordered,
            )
        return key_value_store_builder(
            self.name,
            key_serde,
            value_serde,
            persistent=self.persistent,
            logging=self.logging_enabled,
            caching=self.caching_enabled,
            changelog_config=self.changelog_config,
        )


def resolve_store_builder(builder: Any, config: StreamsConfig) -> StoreBuilder:
    """The store builder a task builds from. With a zero cache budget the caching layer is stripped
    from every store, as Kafka's ``InternalTopologyBuilder.rewriteTopology`` does when the cache size
    is 0: a cache of no bytes would still swallow deletes of absent keys, and Kafka's stores then
    forward every write (a filter's ``Change(null, null)`` included)."""
    resolved = builder.to_builder(config) if isinstance(builder, StoreSpec) else builder
    if config.cache_max_bytes == 0 and getattr(resolved, "caching_enabled", False):
        resolved = resolved.with_caching_disabled()
    return resolved


def changelog_topic_config(
    builder: Any, additional_retention_ms: int = ADDITIONAL_CHANGELOG_RETENTION_MS
) -> dict[str, str]:
    """The config a store's changelog topic is created with, as Kafka Streams' ``InternalTopologyBuilder``
    picks it: window and session stores get ``compact,delete`` with their retention plus
    ``windowstore.changelog.additional.retention.ms`` (so the topic stays bounded), every other store
    ``compact``; the store's own topic config wins over both."""
    if isinstance(builder, StoreSpec):
        own = dict(builder.changelog_config or {})
        if builder.kind in ("window", "session"):
            return windowed_changelog_config(builder.retention_ms, own, additional_retention_ms)
        return {"cleanup.policy": "compact", **own}
    windowed = getattr(builder, "changelog_topic_config", None)
    if windowed is not None:
        return dict(windowed(additional_retention_ms))
    return {"cleanup.policy": "compact", **dict(getattr(builder, "changelog_config", None) or {})}
