"""KeyValueStoreBuilder: assembles the decorator stack, one fresh instance per ``build()`` (per task)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from edge.serde import Serde
    from edge.state.metered import MeteredKeyValueStore


@dataclasses.dataclass(frozen=True, slots=True)
class KeyValueStoreBuilder:
    """Immutable store declaration; ``with_*`` return modified copies (safe to share across topologies)."""

    name: str
    key_serde: Serde
    value_serde: Serde
    persistent: bool = True
    logging_enabled: bool = True
    caching_enabled: bool = True
    changelog_config: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def __init__(
        self,
        name: str,
        key_serde: Serde,
        value_serde: Serde,
        *,
        persistent: bool = True,
        logging: bool = True,
        caching: bool = True,
        changelog_config: Mapping[str, str] | None = None,
    ) -> None:
        from edge.errors import TopologyError

        if not name or not isinstance(name, str):
            raise TopologyError(f"a state store needs a non-empty string name, got {name!r}")
        if any(c in name for c in "/\\") or name in (".", ".."):
            raise TopologyError(
                f"state store name {name!r} must not contain path separators (it names a directory)"
            )
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "key_serde", key_serde)
        object.__setattr__(self, "value_serde", value_serde)
        object.__setattr__(self, "persistent", persistent)
        object.__setattr__(self, "logging_enabled", logging)
        object.__setattr__(self, "caching_enabled", caching)
        object.__setattr__(self, "changelog_config", dict(changelog_config or {}))

    def _copy(self, **changes: object) -> KeyValueStoreBuilder:
        args = {
            "persistent": self.persistent,
            "logging": self.logging_enabled,
            "caching": self.caching_enabled,
            "changelog_config": self.changelog_config,
        }
        args.update(changes)
        return KeyValueStoreBuilder(self.name, self.key_serde, self.value_serde, **args)  # type: ignore[arg-type]

    def with_logging_disabled(self) -> KeyValueStoreBuilder:
        return self._copy(logging=False, changelog_config={})

    def with_logging_enabled(self, config: Mapping[str, str] | None = None) -> KeyValueStoreBuilder:
        return self._copy(logging=True, changelog_config=dict(config or self.changelog_config))

    def with_caching_disabled(self) -> KeyValueStoreBuilder:
        return self._copy(caching=False)

    def with_caching_enabled(self) -> KeyValueStoreBuilder:
        return self._copy(caching=True)

    def build(self) -> MeteredKeyValueStore:
        from edge.state.caching import CachingKeyValueStore
        from edge.state.changelogging import ChangeLoggingKeyValueStore
        from edge.state.memory import InMemoryKeyValueStore
        from edge.state.metered import MeteredKeyValueStore
        from edge.state.rocksdb import RocksDBKeyValueStore

        store = RocksDBKeyValueStore(self.name) if self.persistent else InMemoryKeyValueStore(self.name)
        if self.logging_enabled:
            store = ChangeLoggingKeyValueStore(store)
        if self.caching_enabled:
            store = CachingKeyValueStore(store)
        return MeteredKeyValueStore(store, self.key_serde, self.value_serde)


def key_value_store_builder(
    name: str,
    key_serde: Serde,
    value_serde: Serde,
    *,
    persistent: bool = True,
    logging: bool = True,
    caching: bool = True,
    changelog_config: Mapping[str, str] | None = None,
) -> KeyValueStoreBuilder:
    """Declare a key-value store (RocksDB if ``persistent`` else in-memory) with its decorator stack.

    Lives beside the builder it returns, not in :mod:`edge.state.api`: the stores implement that
    contract, and the builder builds the stores, so the contract must not import the builder."""
    return KeyValueStoreBuilder(
        name,
        key_serde,
        value_serde,
        persistent=persistent,
        logging=logging,
        caching=caching,
        changelog_config=changelog_config,
    )
