"""Window and session store builders (Kafka's ``Stores.windowStoreBuilder`` / ``sessionStoreBuilder``).

The stores themselves are in :mod:`edge.state.window_store`; a stream-stream join's window stores (those
that retain duplicates) get the in-memory index of :mod:`edge.state.join_window`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from edge.serde.windowed import session_store_key_end, window_store_key_timestamp
from edge.state.join_window import IndexedJoinWindowStore
from edge.state.segments import SegmentedBytesStore
from edge.state.window_store import ListIterator, MeteredSessionStore, MeteredWindowStore

if TYPE_CHECKING:
    from edge.serde import Serde

__all__ = [
    "ADDITIONAL_CHANGELOG_RETENTION_MS",
    "ListIterator",
    "MeteredSessionStore",
    "MeteredWindowStore",
    "SessionStoreBuilder",
    "WindowStoreBuilder",
    "session_store_builder",
    "window_store_builder",
    "windowed_changelog_config",
]

#: Kafka's ``windowstore.changelog.additional.retention.ms`` default: a changelog keeps a day more
ADDITIONAL_CHANGELOG_RETENTION_MS = 86_400_000
#: a retention that overflows a Java long is capped there, as Kafka's ``Math.addExact`` fallback does
_LONG_MAX = 2**63 - 1


# -- builders -------------------------------------------------------------------------------------------


def _check_name(name: str) -> None:
    from edge.errors import TopologyError

    if not name or not isinstance(name, str):
        raise TopologyError(f"a state store needs a non-empty string name, got {name!r}")
    if any(c in name for c in "/\\") or name in (".", ".."):
        raise TopologyError(
            f"state store name {name!r} must not contain path separators (it names a directory)"
        )


def windowed_changelog_config(
    retention_ms: int,
    extra: Mapping[str, str] | None = None,
    additional_retention_ms: int = ADDITIONAL_CHANGELOG_RETENTION_MS,
) -> dict[str, str]:
    """Kafka's windowed changelog settings (``WindowedChangelogTopicConfig``): compacted and deleted,
    kept for the store's retention plus ``windowstore.changelog.additional.retention.ms``, so the topic
    stays bounded while every window a restore needs is still in it. The store's own topic config
    (``extra``) wins, and a ``retention.ms`` there is taken as given."""
    config = {"cleanup.policy": "compact,delete", **(extra or {})}
    if "retention.ms" not in (extra or {}):
        config["retention.ms"] = str(min(retention_ms + additional_retention_ms, _LONG_MAX))
    return config


class _WindowedBuilderOptions:
    """The ``with_*`` options both windowed builders share (frozen dataclasses: each returns a copy)."""

    name: str
    retention_ms: int
    logging_enabled: bool
    changelog_config: Mapping[str, str]
    #: the store's own changelog topic config as the user gave it (Kafka's ``logConfig``)
    topic_config: Mapping[str, str]

    def __post_init__(self) -> None:
        _check_name(self.name)
        if not self.changelog_config and self.logging_enabled:
            object.__setattr__(
                self, "changelog_config", windowed_changelog_config(self.retention_ms, self.topic_config)
            )

    def changelog_topic_config(self, additional_retention_ms: int) -> dict[str, str]:
        """The changelog's topic config under an app's ``windowstore.changelog.additional.retention.ms``."""
        if not self.logging_enabled:
            return {}
        return windowed_changelog_config(self.retention_ms, self.topic_config, additional_retention_ms)

    def with_logging_disabled(self) -> Any:
        return dataclasses.replace(  # type: ignore[type-var]
            self, logging_enabled=False, changelog_config={}, topic_config={}
        )

    def with_logging_enabled(self, config: Mapping[str, str] | None = None) -> Any:
        return dataclasses.replace(  # type: ignore[type-var]
            self,
            logging_enabled=True,
            changelog_config=windowed_changelog_config(self.retention_ms, config),
            topic_config=dict(config or {}),
        )

    def with_caching_disabled(self) -> Any:
        return dataclasses.replace(self, caching_enabled=False)  # type: ignore[type-var]

    def with_caching_enabled(self) -> Any:
        return dataclasses.replace(self, caching_enabled=True)  # type: ignore[type-var]


@dataclasses.dataclass(frozen=True)
class WindowStoreBuilder(_WindowedBuilderOptions):
    """Declares a window store; ``build()`` makes a fresh stack per task."""

    name: str
    key_serde: Any
    value_serde: Any
    window_size_ms: int
    retention_ms: int
    retain_duplicates: bool = False
    persistent: bool = True
    logging_enabled: bool = True
    caching_enabled: bool = True
    changelog_config: Mapping[str, str] = dataclasses.field(default_factory=dict)
    topic_config: Mapping[str, str] = dataclasses.field(default_factory=dict)
    #: Kafka's time-ordered RocksDB window store (an ON_WINDOW_CLOSE aggregation's default): windows
    #: stay readable one millisecond longer (see ``SegmentedBytesStore.time_first``)
    time_ordered: bool = False

    def build(self) -> MeteredWindowStore:
        from edge.state.caching import CachingKeyValueStore
        from edge.state.changelogging import ChangeLoggingKeyValueStore

        store: Any = SegmentedBytesStore(
            self.name,
            retention_ms=self.retention_ms,
            time_of=window_store_key_timestamp,
            persistent=self.persistent,
            time_first=self.time_ordered,
        )
        if self.logging_enabled:
            store = ChangeLoggingKeyValueStore(store)
        if self.caching_enabled and not self.retain_duplicates:
            store = CachingKeyValueStore(store)
        metered: type[MeteredWindowStore] = MeteredWindowStore
        if self.retain_duplicates:
            # a join side's store: its recent records are looked up once per record of the other side
            metered = IndexedJoinWindowStore
        return metered(
            store,
            self.key_serde,
            self.value_serde,
            window_size_ms=self.window_size_ms,
            retention_ms=self.retention_ms,
            retain_duplicates=self.retain_duplicates,
        )


@dataclasses.dataclass(frozen=True)
class SessionStoreBuilder(_WindowedBuilderOptions):
    name: str
    key_serde: Any
    value_serde: Any
    retention_ms: int
    persistent: bool = True
    logging_enabled: bool = True
    caching_enabled: bool = True
    changelog_config: Mapping[str, str] = dataclasses.field(default_factory=dict)
    topic_config: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def build(self) -> MeteredSessionStore:
        from edge.state.caching import CachingKeyValueStore
        from edge.state.changelogging import ChangeLoggingKeyValueStore

        store: Any = SegmentedBytesStore(
            self.name,
            retention_ms=self.retention_ms,
            time_of=session_store_key_end,
            persistent=self.persistent,
        )
        if self.logging_enabled:
            store = ChangeLoggingKeyValueStore(store)
        if self.caching_enabled:
            store = CachingKeyValueStore(store)
        return MeteredSessionStore(store, self.key_serde, self.value_serde, self.retention_ms)


def window_store_builder(
    name: str,
    key_serde: Serde,
    value_serde: Serde,
    *,
    window_size_ms: int,
    retention_ms: int,
    retain_duplicates: bool = False,
    persistent: bool = True,
    logging: bool = True,
    caching: bool = True,
    changelog_config: Mapping[str, str] | None = None,
    time_ordered: bool = False,
) -> WindowStoreBuilder:
    """Declare a window store (Kafka's ``Stores.windowStoreBuilder(persistentWindowStore(...))``;
    ``time_ordered``: its time-ordered store, which an ON_WINDOW_CLOSE aggregation gets)."""
    if retention_ms < window_size_ms:
        from edge.errors import TopologyError

        raise TopologyError(
            f"store {name!r}: retention ({retention_ms} ms) must be at least "
            f"the window size ({window_size_ms} ms)"
        )
    return WindowStoreBuilder(
        name,
        key_serde,
        value_serde,
        window_size_ms,
        retention_ms,
        retain_duplicates,
        persistent,
        logging,
        caching,
        windowed_changelog_config(retention_ms, changelog_config) if logging else {},
        dict(changelog_config or {}) if logging else {},
        time_ordered,
    )


def session_store_builder(
    name: str,
    key_serde: Serde,
    value_serde: Serde,
    *,
    retention_ms: int,
    persistent: bool = True,
    logging: bool = True,
    caching: bool = True,
    changelog_config: Mapping[str, str] | None = None,
) -> SessionStoreBuilder:
    """Declare a session store (Kafka's ``Stores.sessionStoreBuilder(persistentSessionStore(...))``)."""
    return SessionStoreBuilder(
        name,
        key_serde,
        value_serde,
        retention_ms,
        persistent,
        logging,
        caching,
        windowed_changelog_config(retention_ms, changelog_config) if logging else {},
        dict(changelog_config or {}) if logging else {},
    )
