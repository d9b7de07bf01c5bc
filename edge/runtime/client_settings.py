"""Kafka client settings as Kafka Streams takes them, so a Java app's properties file runs unchanged.

Kafka Streams applies an unprefixed client setting to every client it fits (``session.timeout.ms`` to
the consumers, ``acks`` to the producer), a ``consumer.``/``producer.``/``admin.`` prefixed one to that
client type, and a ``main.consumer.``/``restore.consumer.``/``global.consumer.`` prefixed one to that
consumer only, the most specific winning. A setting it does not know is logged and ignored, never
fatal. The clients here are librdkafka's, so:

* whether a setting fits a consumer, a producer or both is asked of librdkafka itself
  (:func:`edge.kafka.profile.client_property_scope`), not kept in a table that would drift;
* the few Java client names librdkafka spells differently are translated (``fetch.max.wait.ms``);
* Java-only settings (serializer classes, JAAS, trust stores) are ignored with what to set instead;
* a known setting with an invalid value fails at once, naming it, as a Java client would at start.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from edge.kafka.profile import client_property_scope

log = logging.getLogger(__name__)

#: prefix -> the layer it sets (most specific first, so ``main.consumer.`` is not read as ``consumer.``)
PREFIXES: tuple[tuple[str, str], ...] = (
    ("main.consumer.", "main.consumer"),
    ("restore.consumer.", "restore.consumer"),
    ("global.consumer.", "global.consumer"),
    ("consumer.", "consumer"),
    ("producer.", "producer"),
    ("admin.", "admin"),
)

#: the layers of each client, least specific first (Kafka's precedence: prefixed beats unprefixed)
CLIENT_LAYERS: Mapping[str, tuple[str, ...]] = {
    "main.consumer": ("any.consumer", "consumer", "main.consumer"),
    "restore.consumer": ("any.consumer", "consumer", "restore.consumer"),
    "global.consumer": ("any.consumer", "consumer", "global.consumer"),
    "consumer": ("any.consumer", "consumer"),
    "producer": ("any.producer", "producer"),
    "admin": ("any.admin", "admin"),
}

#: Java client names librdkafka knows under another name
JAVA_NAMES: Mapping[str, str] = {
    "fetch.max.wait.ms": "fetch.wait.max.ms",
    "max.request.size": "message.max.bytes",
    "receive.buffer.bytes": "socket.receive.buffer.bytes",
    "send.buffer.bytes": "socket.send.buffer.bytes",
}

#: Java-only client settings: what a librdkafka user sets instead (empty: nothing to set)
JAVA_ONLY: Mapping[str, str] = {
    "key.serializer": "",
    "value.serializer": "",
    "key.deserializer": "",
    "value.deserializer": "",
    "interceptor.classes": "",
    "metric.reporters": "",
    "default.api.timeout.ms": "",
    "max.block.ms": "",
    "buffer.memory": "queue.buffering.max.kbytes",
    "sasl.jaas.config": "sasl.username and sasl.password",
    "sasl.client.callback.handler.class": "",
    "sasl.login.callback.handler.class": "",
    "ssl.truststore.location": "ssl.ca.location (a PEM file)",
    "ssl.truststore.password": "ssl.ca.location (a PEM file)",
    "ssl.truststore.type": "ssl.ca.location (a PEM file)",
    "ssl.keystore.type": "ssl.keystore.location (PKCS#12) or ssl.certificate.location + ssl.key.location",
}

#: Kafka Streams settings accepted but not acted on here, and why (a properties file must still run)
STREAMS_NOT_APPLIED: Mapping[str, str] = {
    "num.stream.threads": "a StreamsApp is one stream thread (`streamhouse edge run` starts N processes)",
    "client.id": "client ids are <application.id>-<instance id>-<suffix> (queries map members by them)",
    "state.cleanup.delay.ms": "task directories of tasks moved away are removed when the task closes",
    "task.timeout.ms": "see cluster.unavailable.timeout.ms",
    "rack.aware.assignment.tags": "",
    "rack.aware.assignment.strategy": "",
    "default.dsl.store": "choose stores per operator with Materialized.as_(Stores....)",
    "dsl.store.suppliers.class": "choose stores per operator with Materialized.as_(Stores....)",
    "rocksdb.config.setter": "",
    "metrics.recording.level": "",
    "metrics.num.samples": "",
    "metrics.sample.window.ms": "",
    "built.in.metrics.version": "",
    "repartition.purge.interval.ms": "",
    "window.size.ms": "",
    "windowed.inner.class.serde": "",
    "default.client.supplier": "",
    "log.summary.interval.ms": "",
    "enable.metrics.push": "",
}

#: settings the runtime owns (Kafka Streams overrides a user's value of these with its own, warning)
OWNED: Mapping[str, str] = {
    "group.id": "the application.id",
    "enable.auto.commit": "false: offsets are committed with the tasks' state",
    "transactional.id": "<application.id>-<instance id> under exactly_once_v2",
    "partition.assignment.strategy": "cooperative-sticky (range, eager, under upgrade.from <= 2.3)",
}
#: owned only under exactly-once
OWNED_EXACTLY_ONCE: Mapping[str, str] = {
    "isolation.level": "read_committed under exactly_once_v2",
    "enable.idempotence": "true under exactly_once_v2",
}

#: client settings a properties file commonly has: candidates for "did you mean"
COMMON_CLIENT_SETTINGS = (
    "acks", "auto.offset.reset", "batch.size", "bootstrap.servers", "compression.type",
    "connections.max.idle.ms", "delivery.timeout.ms", "enable.idempotence", "fetch.max.bytes",
    "fetch.min.bytes", "fetch.wait.max.ms", "heartbeat.interval.ms", "isolation.level", "linger.ms",
    "max.in.flight.requests.per.connection", "max.partition.fetch.bytes", "max.poll.interval.ms",
    "message.max.bytes", "metadata.max.age.ms", "retries", "sasl.mechanism", "sasl.password",
    "sasl.username", "session.timeout.ms", "socket.receive.buffer.bytes", "socket.send.buffer.bytes",
    "ssl.ca.location", "ssl.certificate.location", "ssl.key.location", "transaction.timeout.ms",
)  # fmt: skip


class ClientSettingError(ValueError):
    """librdkafka rejected a client setting's value."""


@dataclass
class SortedSettings:
    """A properties mapping sorted into streams settings and client layers, with what was ignored."""

    streams: dict[str, Any] = field(default_factory=dict)
    #: layer ("any.consumer", "consumer", "main.consumer", ..., "admin") -> settings
    layers: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: (key, why) for each setting accepted without effect
    ignored: list[tuple[str, str]] = field(default_factory=list)

    def put(self, layer: str, key: str, value: Any) -> None:
        self.layers.setdefault(layer, {})[key] = value


def sort_settings(
    values: Mapping[str, Any], streams_keys: Iterable[str], *, exactly_once: bool
) -> SortedSettings:
    """Sort ``values`` as Kafka Streams does; unknown and not-applied settings go to ``ignored``."""
    known = set(streams_keys)
    out = SortedSettings()
    for raw_key, value in values.items():
        key = str(raw_key)
        if key in known:
            out.streams[key] = value
            continue
        layer, name = _prefix_of(key)
        if layer is None and key in STREAMS_NOT_APPLIED:
            out.ignored.append((key, _why(STREAMS_NOT_APPLIED[key], "not supported by the edge")))
            continue
        owned = _owned(name, exactly_once)
        if owned is not None:
            out.ignored.append((key, f"the runtime sets it ({owned})"))
            continue
        if name in JAVA_ONLY:
            instead = JAVA_ONLY[name]
            hint = f"; set {instead} instead" if instead else ""
            out.ignored.append((key, f"a Java-only client setting{hint}"))
            continue
        name = JAVA_NAMES.get(name, name)
        scope = client_scope(name, value)
        if scope is None:
            out.ignored.append((key, _unknown(key, known)))
            continue
        if layer is not None:
            out.put(layer, name, value)
            continue
        for kind in scope:
            out.put(f"any.{kind}", name, value)
    return out


def warn_ignored(ignored: Iterable[tuple[str, str]]) -> None:
    for key, why in ignored:
        log.warning("the configuration %r was supplied but is ignored: %s", key, why)


def client_scope(name: str, value: Any) -> tuple[str, ...] | None:
    """The clients ``name`` fits (librdkafka says); None when it is no client setting. An invalid
    value raises :class:`ClientSettingError`."""
    try:
        return client_property_scope(name, value)
    except ValueError as exc:
        raise ClientSettingError(str(exc)) from None


def _prefix_of(key: str) -> tuple[str | None, str]:
    for prefix, layer in PREFIXES:
        if key.startswith(prefix):
            return layer, key[len(prefix) :]
    return None, key


def _owned(name: str, exactly_once: bool) -> str | None:
    if name in OWNED:
        return OWNED[name]
    return OWNED_EXACTLY_ONCE.get(name) if exactly_once else None


def _why(reason: str, default: str) -> str:
    return reason or default


def _unknown(key: str, streams_keys: set[str]) -> str:
    candidates = sorted(streams_keys | set(COMMON_CLIENT_SETTINGS) | set(JAVA_NAMES))
    close = difflib.get_close_matches(key, candidates, n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"not a Kafka Streams setting nor a Kafka client setting{hint}"
