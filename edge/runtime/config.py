"""Runtime configuration of one StreamsApp instance, with Kafka Streams' key names and clear errors.

``StreamsConfig.from_mapping({"application.id": "wordcount", "bootstrap.servers": "...", ...})`` accepts
the dotted Kafka Streams names (or their snake_case attribute names); unknown keys and bad values raise
:class:`StreamsConfigError` naming the key. Python objects (serdes, exception handlers, listeners) are
passed as keyword arguments. ``consumer.<prop>`` / ``producer.<prop>`` keys pass librdkafka settings
through to those clients only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from edge.errors import StreamhouseError
from edge.kafka.profile import BrokerProfile, KafkaClientConfig, detect_profile
from edge.paths import InvalidApplicationIdError, check_application_id
from edge.runtime.client_settings import (
    CLIENT_LAYERS,
    PREFIXES,
    ClientSettingError,
    sort_settings,
    warn_ignored,
)

AT_LEAST_ONCE = "at_least_once"
EXACTLY_ONCE_V2 = "exactly_once_v2"
GUARANTEES = (AT_LEAST_ONCE, EXACTLY_ONCE_V2)

#: What the uncaught exception handler may answer (Kafka's StreamsUncaughtExceptionHandler responses).
SHUTDOWN_CLIENT = "shutdown_client"
SHUTDOWN_APPLICATION = "shutdown_application"
REPLACE_THREAD = "replace_thread"

_APP_ID = re.compile(r"^[a-zA-Z0-9._-]{1,200}$")
#: an entry of ``http.allowed.hosts``: a host name or IPv4 address, or a bracketed IPv6 address, with an
#: optional port
_HOST_ENTRY = re.compile(
    r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_.])?)(?::(\d{1,5}))?$"
)


#: Kafka declares these settings INT (the rest of the numeric ones LONG): larger values fail there too
_JAVA_INT_SETTINGS = frozenset(
    {
        "num.standby.replicas",
        "max.warmup.replicas",
        "replication.factor",
        "max.poll.records",
        "buffered.records.per.partition",
        "transaction.timeout.ms",
        "restore.batch.records",
    }
)
_JAVA_INT_MAX = 2**31 - 1
_JAVA_LONG_MAX = 2**63 - 1


_CLIENT_PREFIXES = tuple(prefix for prefix, _ in PREFIXES)


class StreamsConfigError(StreamhouseError):
    """A runtime setting is missing, unknown or malformed; the message names the key."""


def _parse_server(key: str, value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) < 65536:
        raise StreamsConfigError(f"{key}: expected host:port (port 0 = pick a free one), got {value!r}")
    return host, int(port)


def _allowed_hosts(value: Any) -> tuple[str, ...]:
    """``http.allowed.hosts`` as a tuple of ``host`` / ``host:port`` entries (from a comma-separated
    string or a sequence); a URL, a wildcard or a bad port is refused now rather than never matching."""
    items = value.split(",") if isinstance(value, str) else value
    try:
        entries = tuple(e for e in (str(item).strip() for item in items) if e)
    except TypeError:
        raise StreamsConfigError(f"http.allowed.hosts: expected host names, got {value!r}") from None
    for entry in entries:
        match = _HOST_ENTRY.match(entry)
        if not match or (match.group(2) is not None and int(match.group(2)) > 65535):
            raise StreamsConfigError(
                "http.allowed.hosts: expected comma-separated host names or IP addresses, each with an "
                f"optional :port (IPv6 in brackets), got {entry!r}"
            )
    return entries


@dataclass(frozen=True)
class StreamsConfig:
    application_id: str
    bootstrap_servers: str
    #: ``embedded`` (the tuning measured on the embedded Tansu broker) or ``real`` (Kafka's defaults);
    #: unset (or ``auto``): asked of the cluster at start (:func:`edge.kafka.profile.detect_profile`)
    broker_profile: BrokerProfile | None = None
    #: passed to every Kafka client (SASL/TLS, client.id, ...)
    kafka: Mapping[str, Any] = field(default_factory=dict)
    #: ``consumer.<prop>`` / ``producer.<prop>`` settings (every consumer / the producers)
    consumer_overrides: Mapping[str, Any] = field(default_factory=dict)
    producer_overrides: Mapping[str, Any] = field(default_factory=dict)
    #: the other client settings of a Kafka Streams properties mapping, by layer
    #: (:mod:`edge.runtime.client_settings`); read them through :meth:`client_overrides`
    client_settings: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    state_dir: Path = Path(".state/streams")
    processing_guarantee: str = AT_LEAST_ONCE
    #: None = Kafka's default for the guarantee (30 s at-least-once, 100 ms exactly-once)
    commit_interval_ms: int | None = None
    num_standby_replicas: int = 0
    #: KIP-441 (:mod:`edge.runtime.warmup`): a joining instance takes over a stateful task only once its
    #: warm-up copy is at most this many changelog records behind (Kafka's default 10000)
    acceptable_recovery_lag: int = 10_000
    #: KIP-441: how many stateful tasks a joining instance warms up before it joins (Kafka's default 2;
    #: 0 joins at once, restoring whatever it is given)
    max_warmup_replicas: int = 2
    #: KIP-441: the longest a joining instance waits for its warm-ups before it joins anyway (Kafka's
    #: default 10 min; Kafka Streams probes again at this interval, here the lag is checked continuously)
    probing_rebalance_interval_ms: int = 600_000
    #: Kafka Streams' ``upgrade.from``: 2.3 or older selects the eager rebalance protocol (every rebalance
    #: revokes every task) instead of the cooperative one (:mod:`edge.runtime.assignment`)
    upgrade_from: str | None = None
    #: replication factor of the internal topics this app creates (changelog, repartition, metadata, DLQ);
    #: -1 (Kafka Streams' default since 3.0) = the broker's ``default.replication.factor``, so an app needs
    #: no setting to get a cluster's replication (CreateTopics takes -1 from Kafka 2.4 on)
    replication_factor: int = -1
    #: advertised ``host:port`` of this instance's query/metrics HTTP server; port 0 = a free port
    application_server: str = "127.0.0.1:0"
    #: interface the HTTP server binds to (loopback unless you mean to expose it)
    http_bind_host: str = "127.0.0.1"
    #: False disables the HTTP server (no interactive queries, no /metrics)
    http_enabled: bool = True
    #: NOT in Kafka Streams: extra names (``host`` or ``host:port``, comma-separated) the HTTP server
    #: answers as ``Host``, beyond 127.0.0.1, localhost, [::1], the bind address and the host of
    #: ``application.server``; any other ``Host`` gets 421 (so a browser page cannot read stores through
    #: a DNS-rebound name). Needed when clients reach the instance by a name it does not advertise.
    http_allowed_hosts: tuple[str, ...] = ()
    #: stable identity of this instance (transactional.id suffix); default: persisted in the state dir
    instance_id: str | None = None
    cache_max_bytes: int = 10 * 1024 * 1024
    #: NOT Kafka Streams: per stream-stream join window store, bytes of recent records also kept in memory
    #: to answer the join's look-ups without RocksDB (0: off)
    join_index_max_bytes: int = 16 * 1024 * 1024
    #: stores without the record cache send their changelog records collapsed per key at each commit
    #: (one per key per commit, not one per write: fewer records to produce and to restore; the
    #: restored state is the same). False: one changelog record per store write.
    changelog_collapse: bool = True
    max_poll_records: int = 1000
    #: Kafka's ``poll.ms``: how long the stream thread blocks waiting for input when it has none; a
    #: batch is handed over as soon as any record is there (up to ``max.poll.records``)
    poll_ms: int = 5
    restore_batch_records: int = 5000
    #: a changelog partition that yields nothing for this long while restoring is an error
    restore_timeout_ms: int = 60_000
    #: how often an instance republishes its metadata (hosted partitions) for interactive queries
    metadata_interval_ms: int = 2000
    #: Kafka Streams' exactly-once default: a crashed instance's open transaction is aborted after this,
    #: which unblocks read_committed restores of its changelog partitions
    transaction_timeout_ms: int = 10_000
    #: NOT in Kafka Streams (which retries forever; its nearest is ``task.timeout.ms``): once no broker
    #: of the cluster has answered for this long, the instance stops in state ERROR (``streamhouse edge
    #: run`` exits 1) instead of waiting forever. Shorter outages: the tasks are dropped after the
    #: consumer's ``session.timeout.ms`` (state REBALANCING) and resume from the last commit.
    cluster_unavailable_timeout_ms: int = 300_000
    #: a window or session store's changelog keeps records this long past the store's retention
    #: (``retention.ms`` of its ``compact,delete`` topic): Kafka's allowance for clock drift
    windowstore_changelog_additional_retention_ms: int = 86_400_000
    #: ``fail`` | ``continue`` | ``dlq`` (``dlq`` needs ``errors.dead.letter.queue.topic.name``)
    default_deserialization_exception_handler: str = "fail"
    default_processing_exception_handler: str = "fail"
    #: Kafka's ``default.production.exception.handler``: ``fail`` | ``continue`` for a record a sink
    #: cannot serialize (``continue`` drops it, logged and counted in the dropped-records metric)
    default_production_exception_handler: str = "fail"
    #: Kafka's ``topology.optimization``: ``none``, ``all`` or a comma-separated list of
    #: ``reuse.ktable.source.topics``, ``merge.repartition.topics``; applied when the app is given a
    #: StreamsBuilder (a Topology is already built: pass ``optimization=`` to ``StreamsBuilder.build``)
    topology_optimization: str = "none"
    errors_dead_letter_queue_topic_name: str | None = None
    #: ``shutdown_client`` | ``shutdown_application`` | ``replace_thread``: answer when no handler is set
    uncaught_exception_response: str = SHUTDOWN_CLIENT
    #: Kafka's ``max.task.idle.ms``: a task reading several partitions (join/merge of co-partitioned
    #: topics) processes the buffered record with the lowest timestamp next; while one of its partitions
    #: has nothing buffered it waits for data known to be on the broker, and for a caught-up partition up
    #: to this long before going on without it. 0 (Kafka's default): no extra wait; -1: never wait.
    max_task_idle_ms: int = 0
    #: Kafka's ``buffered.records.per.partition``: a partition with more records buffered than this (waiting
    #: for another partition of its task) is paused until the task catches up
    buffered_records_per_partition: int = 1000
    #: NOT in Kafka Streams (an opt-in extension): when a task has processed no record for this long of
    #: wall-clock time, its stream time advances with the wall clock (stream time at the last record +
    #: wall-clock time elapsed since), firing stream-time punctuators and stream-time listeners, so
    #: windows and suppressions on quiet partitions close. -1 (default): stream time moves with records
    #: only, as in Kafka Streams. Nothing happens before a task's first record.
    idle_stream_time_advance_ms: int = -1
    #: Kafka's internal ``emit.interval.ms.kstreams.outer.join.spurious.results.fix``: the least wall-clock
    #: time between two scans of a left/outer stream-stream join's records waiting for their window to close
    emit_interval_ms_kstreams_outer_join_spurious_results_fix: int = 1000
    #: Kafka's internal ``emit.interval.ms.kstreams.windowed.aggregation``: the least wall-clock time between
    #: two checks for closed windows of an emit-on-window-close aggregation
    emit_interval_ms_kstreams_windowed_aggregation: int = 1000
    #: timestamp extractor of sources without their own (``Consumed.with_timestamp_extractor``): a name
    #: (``record`` = Kafka's FailOnInvalidTimestamp, ``log_and_skip``, ``use_partition_time``,
    #: ``wallclock``, ``field:<name>`` = a value field) or, as a keyword argument, any extractor object
    default_timestamp_extractor: Any = None
    #: Python objects: serdes, handlers, listeners (not settable from a mapping of strings)
    default_key_serde: Any = None
    default_value_serde: Any = None
    deserialization_exception_handler: Any = None
    processing_exception_handler: Any = None

    def __post_init__(self) -> None:
        try:
            check_application_id(self.application_id)
        except InvalidApplicationIdError as exc:
            raise StreamsConfigError(str(exc)) from None
        if not self.bootstrap_servers:
            raise StreamsConfigError("bootstrap.servers is required (host:port[,host:port...])")
        for server in str(self.bootstrap_servers).split(","):
            _parse_server("bootstrap.servers", server.strip())
        if self.processing_guarantee not in GUARANTEES:
            raise StreamsConfigError(
                f"processing.guarantee must be one of {', '.join(GUARANTEES)}, "
                f"got {self.processing_guarantee!r}"
            )
        for key, value, low in (
            ("commit.interval.ms", self.commit_interval_ms, 0),
            ("num.standby.replicas", self.num_standby_replicas, 0),
            ("acceptable.recovery.lag", self.acceptable_recovery_lag, 0),
            ("max.warmup.replicas", self.max_warmup_replicas, 0),
            ("probing.rebalance.interval.ms", self.probing_rebalance_interval_ms, 0),
            # -1 is the broker's default; 0 and other negatives are refused as Kafka Streams refuses them
            ("replication.factor", None if self.replication_factor == -1 else self.replication_factor, 1),
            ("cache.max.bytes.buffering", self.cache_max_bytes, 0),
            ("join.index.max.bytes", self.join_index_max_bytes, 0),
            ("max.poll.records", self.max_poll_records, 1),
            ("poll.ms", self.poll_ms, 0),
            ("restore.batch.records", self.restore_batch_records, 1),
            ("restore.timeout.ms", self.restore_timeout_ms, 1),
            ("metadata.interval.ms", self.metadata_interval_ms, 1),
            ("transaction.timeout.ms", self.transaction_timeout_ms, 1000),
            ("cluster.unavailable.timeout.ms", self.cluster_unavailable_timeout_ms, 1000),
            (
                "windowstore.changelog.additional.retention.ms",
                self.windowstore_changelog_additional_retention_ms,
                0,
            ),
            ("max.task.idle.ms", self.max_task_idle_ms, -1),
            ("buffered.records.per.partition", self.buffered_records_per_partition, 1),
            ("idle.stream.time.advance.ms", self.idle_stream_time_advance_ms, -1),
            (
                "emit.interval.ms.kstreams.outer.join.spurious.results.fix",
                self.emit_interval_ms_kstreams_outer_join_spurious_results_fix,
                0,
            ),
            (
                "emit.interval.ms.kstreams.windowed.aggregation",
                self.emit_interval_ms_kstreams_windowed_aggregation,
                0,
            ),
        ):
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                also = " or -1 (the broker's default)" if key == "replication.factor" else ""
                raise StreamsConfigError(f"{key} must be an integer >= {low}{also}, got {value!r}")
            high = _JAVA_INT_MAX if key in _JAVA_INT_SETTINGS else _JAVA_LONG_MAX
            if value > high:
                raise StreamsConfigError(f"{key} must be at most {high} (as in Kafka), got {value!r}")
        _parse_server("application.server", self.application_server)
        object.__setattr__(self, "http_allowed_hosts", _allowed_hosts(self.http_allowed_hosts))
        for key, value in (
            ("default.deserialization.exception.handler", self.default_deserialization_exception_handler),
            ("default.processing.exception.handler", self.default_processing_exception_handler),
        ):
            if value not in ("fail", "continue", "dlq"):
                raise StreamsConfigError(f"{key} must be fail, continue or dlq, got {value!r}")
            if value == "dlq" and not self.errors_dead_letter_queue_topic_name:
                raise StreamsConfigError(f"{key}=dlq needs errors.dead.letter.queue.topic.name")
        if self.default_production_exception_handler not in ("fail", "continue"):
            raise StreamsConfigError(
                "default.production.exception.handler must be fail or continue, "
                f"got {self.default_production_exception_handler!r}"
            )
        from edge.dsl.builder import optimization_rules
        from edge.errors import TopologyError

        try:
            optimization_rules(self.topology_optimization)
        except TopologyError as exc:
            raise StreamsConfigError(str(exc)) from None
        if self.uncaught_exception_response not in (SHUTDOWN_CLIENT, SHUTDOWN_APPLICATION, REPLACE_THREAD):
            raise StreamsConfigError(
                "uncaught.exception.response must be shutdown_client, shutdown_application or "
                "replace_thread, "
                f"got {self.uncaught_exception_response!r}"
            )
        if self.instance_id is not None and not _APP_ID.match(self.instance_id):
            raise StreamsConfigError(f"instance.id {self.instance_id!r} must be [a-zA-Z0-9._-]")

    # -- construction -----------------------------------------------------------------------------
    @classmethod
    def from_mapping(cls, values: Mapping[str, Any], **objects: Any) -> StreamsConfig:
        """Build from Kafka-style keys (``application.id``) or attribute names; ``objects``: Python values."""
        names = {f.name for f in fields(cls)}
        kwargs: dict[str, Any] = {}
        others: dict[str, Any] = {}
        for raw_key, value in values.items():
            key = str(raw_key)
            name = _ALIASES.get(key, key.replace(".", "_").replace("-", "_"))
            if name in names and name not in _OBJECT_FIELDS and not key.startswith(_CLIENT_PREFIXES):
                kwargs[name] = _coerce(key, name, value)
            else:
                others[key] = value
        # everything else as Kafka Streams takes it: client settings by prefix and fit, the rest
        # logged and ignored (a Java app's properties file must run unchanged)
        try:
            sorted_settings = sort_settings(
                others,
                (k for k, n in _ALIASES.items() if n not in _OBJECT_FIELDS),
                exactly_once=kwargs.get("processing_guarantee") == EXACTLY_ONCE_V2,
            )
        except ClientSettingError as exc:
            raise StreamsConfigError(str(exc)) from None
        warn_ignored(sorted_settings.ignored)
        if sorted_settings.layers:
            kwargs["client_settings"] = sorted_settings.layers
        kwargs.update(objects)
        for required in ("application_id", "bootstrap_servers"):
            if required not in kwargs:
                raise StreamsConfigError(f"{required.replace('_', '.')} is required")
        return cls(**kwargs)

    def with_overrides(self, **changes: Any) -> StreamsConfig:
        return replace(self, **changes)

    def client_overrides(self, client: str) -> dict[str, Any]:
        """The user's settings for one client (``main.consumer``, ``restore.consumer``,
        ``global.consumer``, ``consumer`` for the others, ``producer``, ``admin``), Kafka Streams'
        precedence applied: unprefixed < ``consumer.``/``producer.``/``admin.`` < ``main.consumer.``..."""
        explicit = {"consumer": self.consumer_overrides, "producer": self.producer_overrides}
        merged: dict[str, Any] = {}
        for layer in CLIENT_LAYERS[client]:
            merged.update(self.client_settings.get(layer, {}))
            merged.update(explicit.get(layer, {}))
        return merged

    # -- derived ----------------------------------------------------------------------------------
    @property
    def exactly_once(self) -> bool:
        return self.processing_guarantee == EXACTLY_ONCE_V2

    @property
    def effective_commit_interval_ms(self) -> int:
        if self.commit_interval_ms is not None:
            return self.commit_interval_ms
        return 100 if self.exactly_once else 30_000

    @property
    def server_host_port(self) -> tuple[str, int]:
        return _parse_server("application.server", self.application_server)

    def client(self) -> KafkaClientConfig:
        return KafkaClientConfig(
            self.bootstrap_servers, self.resolved_profile(), dict(self.kafka), self.client_overrides("admin")
        )

    def resolved_profile(self) -> BrokerProfile:
        """``broker.profile``, or when unset the one the cluster calls for (asked once, then kept)."""
        if self.broker_profile is not None:
            return BrokerProfile(self.broker_profile)
        detected = self.__dict__.get("_detected_profile")
        if detected is None:
            detected = detect_profile(self.bootstrap_servers, self.kafka)
            object.__setattr__(self, "_detected_profile", detected)
        return detected

    @property
    def app_state_dir(self) -> Path:
        return Path(self.state_dir) / self.application_id


def _coerce(key: str, name: str, value: Any) -> Any:
    if name in _INT_FIELDS:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        try:
            return int(str(value).strip())
        except ValueError:
            raise StreamsConfigError(f"{key} must be an integer, got {value!r}") from None
    if name in _BOOL_FIELDS:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("true", "1", "yes", "on"):
            return True
        if text in ("false", "0", "no", "off"):
            return False
        raise StreamsConfigError(f"{key} must be true or false, got {value!r}")
    if name == "state_dir":
        return Path(value)
    if name == "broker_profile":
        if value is None or str(value).strip().lower() in ("", "auto"):
            return None
        try:
            return BrokerProfile(str(value))
        except ValueError:
            raise StreamsConfigError(f"{key} must be embedded, real or auto, got {value!r}") from None
    if name in ("default_key_serde", "default_value_serde") and isinstance(value, str):
        return _named_serde(key, value)
    if name == "default_timestamp_extractor":
        from edge.processor.timestamps import as_extractor

        try:
            return as_extractor(value)
        except (ValueError, TypeError) as exc:
            raise StreamsConfigError(f"{key}: {exc}") from None
    if name in ("kafka", "consumer_overrides", "producer_overrides"):
        if not isinstance(value, Mapping):
            raise StreamsConfigError(f"{key} must be a mapping of client properties")
        return dict(value)
    return value


_INT_FIELDS = {
    "commit_interval_ms",
    "num_standby_replicas",
    "acceptable_recovery_lag",
    "max_warmup_replicas",
    "probing_rebalance_interval_ms",
    "replication_factor",
    "cache_max_bytes",
    "join_index_max_bytes",
    "max_poll_records",
    "poll_ms",
    "restore_batch_records",
    "restore_timeout_ms",
    "metadata_interval_ms",
    "transaction_timeout_ms",
    "cluster_unavailable_timeout_ms",
    "windowstore_changelog_additional_retention_ms",
    "max_task_idle_ms",
    "buffered_records_per_partition",
    "idle_stream_time_advance_ms",
    "emit_interval_ms_kstreams_outer_join_spurious_results_fix",
    "emit_interval_ms_kstreams_windowed_aggregation",
}
_BOOL_FIELDS = {"http_enabled", "changelog_collapse"}
#: Built-in serdes settable by name (``-c default.value.serde=json``); other serdes are Python objects.
_NAMED_SERDES = ("bytes", "string", "int", "long", "float", "double", "json")


def _named_serde(key: str, value: str) -> Any:
    from edge.serde import Serdes

    name = value.strip().lower()
    if name not in _NAMED_SERDES:
        raise StreamsConfigError(f"{key} must be one of {', '.join(_NAMED_SERDES)}, got {value!r}")
    return getattr(Serdes, name)()


_OBJECT_FIELDS = {
    "deserialization_exception_handler",
    "processing_exception_handler",
}
_ALIASES = {
    "application.id": "application_id",
    "bootstrap.servers": "bootstrap_servers",
    "broker.profile": "broker_profile",
    "kafka": "kafka",
    "state.dir": "state_dir",
    "processing.guarantee": "processing_guarantee",
    "commit.interval.ms": "commit_interval_ms",
    "num.standby.replicas": "num_standby_replicas",
    "acceptable.recovery.lag": "acceptable_recovery_lag",
    "max.warmup.replicas": "max_warmup_replicas",
    "probing.rebalance.interval.ms": "probing_rebalance_interval_ms",
    "upgrade.from": "upgrade_from",
    "replication.factor": "replication_factor",
    "application.server": "application_server",
    "http.bind.host": "http_bind_host",
    "http.enabled": "http_enabled",
    "http.allowed.hosts": "http_allowed_hosts",
    "instance.id": "instance_id",
    "cache.max.bytes.buffering": "cache_max_bytes",
    "statestore.cache.max.bytes": "cache_max_bytes",
    "changelog.collapse": "changelog_collapse",
    "join.index.max.bytes": "join_index_max_bytes",
    "max.poll.records": "max_poll_records",
    "poll.ms": "poll_ms",
    "restore.batch.records": "restore_batch_records",
    "restore.timeout.ms": "restore_timeout_ms",
    "metadata.interval.ms": "metadata_interval_ms",
    "transaction.timeout.ms": "transaction_timeout_ms",
    "cluster.unavailable.timeout.ms": "cluster_unavailable_timeout_ms",
    "windowstore.changelog.additional.retention.ms": "windowstore_changelog_additional_retention_ms",
    "default.key.serde": "default_key_serde",
    "default.value.serde": "default_value_serde",
    "default.deserialization.exception.handler": "default_deserialization_exception_handler",
    "default.processing.exception.handler": "default_processing_exception_handler",
    "default.production.exception.handler": "default_production_exception_handler",
    "topology.optimization": "topology_optimization",
    "errors.dead.letter.queue.topic.name": "errors_dead_letter_queue_topic_name",
    "uncaught.exception.response": "uncaught_exception_response",
    "max.task.idle.ms": "max_task_idle_ms",
    "buffered.records.per.partition": "buffered_records_per_partition",
    "idle.stream.time.advance.ms": "idle_stream_time_advance_ms",
    "emit.interval.ms.kstreams.outer.join.spurious.results.fix": (
        "emit_interval_ms_kstreams_outer_join_spurious_results_fix"
    ),
    "emit.interval.ms.kstreams.windowed.aggregation": "emit_interval_ms_kstreams_windowed_aggregation",
    "default.timestamp.extractor": "default_timestamp_extractor",
}
