"""StreamsApp: runs a topology against Kafka (Kafka Streams' ``KafkaStreams`` for one instance).

This module holds the lifecycle: the public API, setup (clients, internal topics, handlers) and the
stream thread's outer loop. The rest of the class lives beside it, one job per module, as mixins:
:mod:`edge.runtime.processing` (the poll loop), :mod:`edge.runtime.record_order` (which task processes
which record, in what order), :mod:`edge.runtime.rebalance` (rebalance callbacks) and
:mod:`edge.runtime.shutdown` (failures and shutdown); :mod:`edge.runtime.signals` handles SIGTERM/SIGINT.

One instance = one stream thread (this module's loop) + one HTTP thread (interactive queries and
``/metrics``) + one metadata thread. The loop owns every task, store, consumer and producer; the HTTP
thread never touches a store directly -- it submits queries that the loop runs between batches, so
stores need no locking.

Assignment: the instance subscribes to every source topic with group ``application.id`` (range
assignor), so partition *p* of co-partitioned topics lands on the same instance; task (sub-topology,
*p*) and its stores follow. See :mod:`edge.runtime.commit` for the commit order.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition

from edge.errors import StreamhouseError
from edge.kafka import BrokerProfile, KafkaClientConfig
from edge.processor.config import StreamsConfig as TaskConfig
from edge.processor.handlers import (
    DeadLetterQueueHandler,
)
from edge.runtime.commit import Committer, ProducerFencedError
from edge.runtime.config import (
    REPLACE_THREAD,
    SHUTDOWN_CLIENT,
    StreamsConfig,
    StreamsConfigError,
)
from edge.runtime.connectivity import ClusterUnavailableError, ClusterWatchdog, ConnectionLogLimiter
from edge.runtime.global_state import GlobalState
from edge.runtime.metadata import InstanceInfo, MetadataService
from edge.runtime.outage import OutageWatchdog
from edge.runtime.processing import ProcessingLoop
from edge.runtime.producer import KafkaCollector
from edge.runtime.rebalance import RebalanceCallbacks
from edge.runtime.record_order import RecordRouter
from edge.runtime.restore import ChangelogReader
from edge.runtime.shutdown import FailureAndShutdown
from edge.runtime.standby import StandbyManager
from edge.runtime.state import Lifecycle, State, StateListener
from edge.runtime.statedir import lock_state_dir, persisted_instance_id
from edge.runtime.stats import CountingHandler, RuntimeStats, build_handler
from edge.runtime.stores import TaskStoreProvider
from edge.runtime.tasks import TaskFactory, TaskRegistry
from edge.runtime.topics import (
    InternalTopicPartitionsError,
    MissingTopicError,
    TopicPlan,
    metadata_topic_name,
    plan_topics,
    validate_topics,
)

log = logging.getLogger(__name__)

UncaughtExceptionHandler = Callable[[BaseException], str]

#: Errors that end the instance whatever the uncaught exception handler answers: replacing the stream
#: thread cannot fix a missing or mis-partitioned topic, nor bring the cluster back.
FATAL_ERRORS = (ClusterUnavailableError, MissingTopicError, InternalTopicPartitionsError)


def resolve_topology(obj: Any, optimization: str | None = None) -> Any:
    """Accept a Topology, a StreamsBuilder (``.build(optimization=...)``, with the app's
    ``topology.optimization``) or a zero-argument callable returning either."""
    if hasattr(obj, "subtopologies") and hasattr(obj, "build_processor_topology"):
        return obj
    if hasattr(obj, "build") and callable(obj.build):
        if optimization is None:
            return resolve_topology(obj.build())
        return resolve_topology(obj.build(optimization=optimization))
    if callable(obj):
        return resolve_topology(obj(), optimization)
    raise StreamsConfigError(
        f"expected a Topology, a StreamsBuilder or a function returning one, got {type(obj).__name__}"
    )


class StreamsApp(ProcessingLoop, RebalanceCallbacks, FailureAndShutdown):
    def __init__(self, topology: Any, config: StreamsConfig | Mapping[str, Any], **objects: Any) -> None:
        if not isinstance(config, StreamsConfig):
            config = StreamsConfig.from_mapping(config, **objects)
        elif objects:
            config = config.with_overrides(**objects)
        self.config = config
        self.topology = resolve_topology(topology, config.topology_optimization)
        self.lifecycle = Lifecycle()
        self.stats = RuntimeStats()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._queries: queue.SimpleQueue[tuple[Callable[[], Any], Future]] = queue.SimpleQueue()
        self._uncaught_handler: UncaughtExceptionHandler | None = None
        self._lock_fd: int | None = None
        self.instance_id: str = ""
        self.fenced = False
        self.error: BaseException | None = None
        self.plan: TopicPlan | None = None
        self.http: Any = None
        self.metadata: MetadataService | None = None
        self.registry: TaskRegistry | None = None
        self.global_state: GlobalState | None = None
        self.standby: StandbyManager | None = None
        self.restoring = False
        self.advertised_server = config.application_server
        #: exactly-once only: the broker passed the aborted-records probe (None: not probed / unknown)
        self.broker_hides_aborted: bool | None = None
        #: an exception raised inside a rebalance callback, re-raised by the loop after consume() returns
        self._callback_error: BaseException | None = None
        self._closing = False
        #: between a revocation and the next assignment (leaving the group then confuses some brokers)
        self._in_rebalance = False
        #: librdkafka's log lines and errors of every client, connection failures rate-limited
        self.connection_log = ConnectionLogLimiter()
        #: how long the cluster has been unreachable (set up with the consumer's session timeout)
        self.watchdog: ClusterWatchdog | None = None
        #: outage and fencing recovery (set up with the watchdog)
        self.outage: OutageWatchdog | None = None
        # built once by _setup (start()); None before, and again once _release_resources dropped them
        self.client: KafkaClientConfig | None = None
        self.task_config: TaskConfig | None = None
        self._client_id = ""
        self._producer_conf: dict[str, Any] = {}
        self._consumer_base: dict[str, Any] = {}
        self.producer: Producer | None = None
        #: output records under at-least-once (reports only failed deliveries; see KafkaCollector)
        self.sink_producer: Producer | None = None
        self.collector: KafkaCollector | None = None
        self.consumer: Consumer | None = None
        self.reader: ChangelogReader | None = None
        self.router: RecordRouter | None = None
        self.committer: Committer | None = None
        self.factory: TaskFactory | None = None
        #: the stores of the active tasks and the global ones, for interactive queries and metrics
        self.stores: TaskStoreProvider | None = None
        self._store_catalog: dict[str, dict[str, Any]] = {}
        #: sub-topologies that may have standby tasks (computed on first use)
        self._eligible_cache: set[int] | None = None
        #: bumped by every rebalance callback: the consumer's assignment can only have changed when it
        #: moved (the processing loop re-reads ``consumer.assignment()`` -- a round trip to librdkafka's
        #: main thread -- only then, not once per batch)
        self._assignment_version = 0

    # -- public API -----------------------------------------------------------------------------------
    @property
    def state(self) -> State:
        return self.lifecycle.state

    def add_state_listener(self, listener: StateListener) -> None:
        self.lifecycle.add_listener(listener)

    set_state_listener = add_state_listener

    def set_uncaught_exception_handler(self, handler: UncaughtExceptionHandler) -> None:
        """``handler(exc)`` returns ``"shutdown_client"`` or ``"shutdown_application"``."""
        self._uncaught_handler = handler

    def start(self) -> None:
        """Validate, create internal topics and start processing in the background.

        Raises (before any thread starts) for mistakes a user can fix: bad config, missing source
        topics, co-partitioning violations, a state directory locked by another instance.
        """
        if self.state is not State.CREATED:
            raise StreamhouseError(f"start() called in state {self.state.value}; an app starts once")
        cfg = self.config
        try:
            self._setup()
        except BaseException:
            self._release_resources()
            raise
        self.lifecycle.transition(State.REBALANCING)
        self._thread = threading.Thread(
            target=self._run, name=f"streamhouse-{cfg.application_id}", daemon=True
        )
        self._thread.start()

    def request_shutdown(self) -> None:
        """Ask the stream thread to stop (safe from signal handlers and listeners); see :meth:`close`."""
        self._stop.set()

    def close(self, timeout: float | None = None) -> bool:
        """Ask the instance to shut down (commit, close stores, leave the group); True if it finished."""
        self._stop.set()
        if self._thread is None:
            if self.state is State.CREATED:
                self.lifecycle.transition(State.PENDING_SHUTDOWN)
                self.lifecycle.transition(State.NOT_RUNNING)
            return True
        if threading.current_thread() is self._thread:
            return False
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def wait(self, timeout: float | None = None) -> State:
        self.lifecycle.wait_for({State.NOT_RUNNING, State.ERROR}, timeout)
        return self.state

    def wait_until_running(self, timeout: float = 60.0) -> bool:
        return self.lifecycle.wait_for({State.RUNNING}, timeout)

    def run_on_stream_thread(self, fn: Callable[[], Any], timeout: float = 5.0) -> Any:
        """Run ``fn`` on the stream thread between batches (how queries read stores safely)."""
        fut: Future = Future()
        self._queries.put((fn, fut))
        return fut.result(timeout)

    # -- setup ----------------------------------------------------------------------------------------
    def _setup(self) -> None:
        cfg = self.config
        app_dir = cfg.app_state_dir
        app_dir.mkdir(parents=True, exist_ok=True)
        self._lock_fd = lock_state_dir(app_dir, cfg.application_id)
        self.instance_id = cfg.instance_id or persisted_instance_id(app_dir)
        base_client = cfg.client()
        client = KafkaClientConfig(
            base_client.bootstrap_servers,
            base_client.profile,
            {
                **base_client.extra,
                "logger": self.connection_log,
                "error_cb": self.connection_log.on_error,
            },
            cfg.client_overrides("admin"),
        )
        self.client = client
        self.plan = plan_topics(
            self.topology,
            cfg.application_id,
            client,
            replication_factor=cfg.replication_factor,
            windowstore_changelog_additional_retention_ms=cfg.windowstore_changelog_additional_retention_ms,
        )
        dlq = cfg.errors_dead_letter_queue_topic_name
        from edge.kafka import TopicSpec, create_topics

        validate_topics(self.plan, client)
        if cfg.exactly_once:
            threading.Thread(
                target=self._probe_exactly_once, name="streamhouse-eos-probe", daemon=True
            ).start()
        if dlq:
            create_topics(client, [TopicSpec(dlq, 1, cfg.replication_factor)])
        counters = self.stats.errors
        deser = build_handler(
            cfg.default_deserialization_exception_handler, cfg.deserialization_exception_handler, dlq
        )
        proc = build_handler(cfg.default_processing_exception_handler, cfg.processing_exception_handler, dlq)
        dlq_topics = {h.topic for h in (deser, proc) if isinstance(h, DeadLetterQueueHandler)}
        task_kwargs: dict[str, Any] = {
            "application_id": cfg.application_id,
            "deserialization_exception_handler": CountingHandler(deser, "deserialization", counters),
            "processing_exception_handler": CountingHandler(proc, "processing", counters),
            "production_exception_handler": cfg.default_production_exception_handler,
            "cache_max_bytes": cfg.cache_max_bytes,
            "state_dir": Path(cfg.state_dir),
            "commit_interval_ms": cfg.effective_commit_interval_ms,
            "changelog_collapse": cfg.changelog_collapse,
            "default_timestamp_extractor": cfg.default_timestamp_extractor,
            "max_task_idle_ms": cfg.max_task_idle_ms,
            "idle_stream_time_advance_ms": cfg.idle_stream_time_advance_ms,
            "emit_interval_ms_kstreams_outer_join_spurious_results_fix": (
                cfg.emit_interval_ms_kstreams_outer_join_spurious_results_fix
            ),
            "emit_interval_ms_kstreams_windowed_aggregation": (
                cfg.emit_interval_ms_kstreams_windowed_aggregation
            ),
        }
        if cfg.default_key_serde is not None:
            task_kwargs["default_key_serde"] = cfg.default_key_serde
        if cfg.default_value_serde is not None:
            task_kwargs["default_value_serde"] = cfg.default_value_serde
        self.task_config = TaskConfig(**task_kwargs)
        # unique per incarnation: two incarnations of one instance id must not look like one group member
        client_id = self._client_id = f"{cfg.application_id}-{self.instance_id}-{uuid.uuid4().hex[:6]}"
        # producer
        pconf = client.producer(
            **{
                "client.id": client_id,
                "partitioner": "murmur2_random",
                "linger.ms": 5,
                "acks": "all",
                # Kafka's producer default: a retried batch is neither duplicated nor reordered, so a
                # commit marker never lands before the changelog records it covers
                "enable.idempotence": True,
                # the stream thread's clients also tell the watchdog about the cluster (others may be
                # idle, and a broker closes idle connections: that is not an outage)
                "error_cb": self._on_stream_client_error,
                "statistics.interval.ms": 2000,
                "stats_cb": self._on_producer_stats,
                **cfg.client_overrides("producer"),
            }
        )
        if cfg.exactly_once:
            pconf["transactional.id"] = f"{cfg.application_id}-{self.instance_id}"
            pconf["transaction.timeout.ms"] = cfg.transaction_timeout_ms
        self._producer_conf = pconf
        self.producer = Producer(pconf)
        if cfg.exactly_once:
            try:
                # fences any previous incarnation with the same transactional.id and aborts its open txn
                self.producer.init_transactions(60)
            except KafkaException as exc:
                raise StreamhouseError(f"could not initialise the transactional producer: {exc}") from exc
        if not cfg.exactly_once and any(st.sink_topics for st in self.topology.subtopologies()):
            # output records through a producer that reports only failed deliveries (see KafkaCollector);
            # its statistics stay away from the watchdog: with no output for a while its connections
            # close, which is no outage
            self.sink_producer = Producer(
                {
                    **{k: v for k, v in pconf.items() if k not in ("stats_cb", "statistics.interval.ms")},
                    "error_cb": self.connection_log.on_error,
                    "delivery.report.only.error": True,
                }
            )
        self.collector = KafkaCollector(
            self.producer,
            exactly_once=cfg.exactly_once,
            max_message_bytes=int(pconf.get("message.max.bytes", 1_000_000)),
            sink_producer=self.sink_producer,
        )
        self.collector.dlq_topics = dlq_topics
        # consumers
        self._consumer_base = client.consumer(None, **cfg.client_overrides("consumer"))
        self._consumer_base["client.id"] = client_id
        if cfg.exactly_once:
            self._consumer_base["isolation.level"] = "read_committed"
        main_conf = client.consumer(
            cfg.application_id,
            **{
                "client.id": client_id,
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "auto.offset.reset": "earliest",
                "isolation.level": "read_committed" if cfg.exactly_once else "read_uncommitted",
                "statistics.interval.ms": 2000,
                "stats_cb": self._on_stats,
                "error_cb": self._on_stream_client_error,
                **cfg.client_overrides("main.consumer"),
            },
        )
        if cfg.max_task_idle_ms >= 0 and any(
            len(st.source_topics) > 1 for st in self.plan.subtopologies.values()
        ):
            # tasks reading several partitions learn "caught up" (lag 0) from end-of-partition events
            main_conf["enable.partition.eof"] = True
        self.consumer = Consumer(main_conf)
        # the group drops a member it has not heard from for session.timeout.ms: so do we (our tasks)
        self.watchdog = ClusterWatchdog(
            lost_after_s=int(main_conf.get("session.timeout.ms", 45_000)) / 1000,
            give_up_after_s=cfg.cluster_unavailable_timeout_ms / 1000,
        )
        watchdog = self.watchdog
        self.outage = OutageWatchdog(
            watchdog,
            self.connection_log,
            self,
            bootstrap_servers=cfg.bootstrap_servers,
            exactly_once=cfg.exactly_once,
            transaction_timeout_ms=cfg.transaction_timeout_ms,
            cluster_unavailable_timeout_ms=cfg.cluster_unavailable_timeout_ms,
            closing=lambda: self._closing,
        )
        self.collector.cluster_unreachable = lambda: not watchdog.reachable
        self.reader = ChangelogReader(
            self._aux_consumer_conf("restore"),
            batch_records=cfg.restore_batch_records,
            timeout_ms=cfg.restore_timeout_ms,
            silent_ahead_s=5.0 if client.profile is BrokerProfile.EMBEDDED else None,
        )
        self.global_state = None
        self.registry = TaskRegistry(self.plan.subtopology_of_topic(), cfg.max_task_idle_ms)
        self.stores = TaskStoreProvider(self.registry, lambda: self.global_state)
        self.router = RecordRouter(
            self.registry,
            self._consumer_error,
            lambda: self.consumer,
            buffered_per_partition=cfg.buffered_records_per_partition,
        )
        self.committer = Committer(
            self.consumer,
            self.producer,
            self.collector,
            exactly_once=cfg.exactly_once,
            # a transaction open longer than transaction.timeout.ms is aborted by its coordinator anyway:
            # waiting longer for a commit (the cluster gone) only keeps the instance RUNNING for nothing
            timeout_s=max(cfg.transaction_timeout_ms / 1000, 5.0) if cfg.exactly_once else 60.0,
        )
        self.committer.cluster_lost = lambda: watchdog.lost
        # HTTP (queries + metrics)
        if cfg.http_enabled:
            from edge.iq.server import QueryServer

            host, port = cfg.server_host_port
            try:
                self.http = QueryServer(self, cfg.http_bind_host, port, stores=self.stores)
            except OSError as exc:
                raise StreamsConfigError(
                    f"cannot serve queries on {cfg.http_bind_host}:{port} ({exc.strerror}); pick another "
                    "port with application.server=host:port (port 0 = any free port)"
                ) from exc
            self.http.start()
            self.advertised_server = f"{host}:{self.http.port}"
        self.metadata = MetadataService(
            metadata_topic_name(cfg.application_id),
            client.producer(**{"client.id": client_id + "-metadata", "linger.ms": 0}),
            self._aux_consumer_conf("metadata"),
            InstanceInfo(self.instance_id, self.advertised_server, self.state.value, client_id=client_id),
            interval_ms=cfg.metadata_interval_ms,
        )
        self.metadata.start()
        self.add_state_listener(
            lambda new, old: self.metadata and self.metadata.update_local(state=new.value)
        )
        self._store_catalog = self._build_store_catalog()

    def _probe_exactly_once(self) -> None:
        """Warn when exactly-once runs on a broker that shows aborted records to read_committed readers
        (the embedded Tansu broker does): downstream consumers may then read outputs of aborted
        transactions, and a restore may apply an aborted changelog write to a store."""
        from edge.kafka.probe import broker_hides_aborted_records

        try:
            # self.client: the probe's clients log through the rate limiter like every other client
            self.broker_hides_aborted = broker_hides_aborted_records(
                self.client, f"{self.config.application_id}-eos-probe"
            )
        except Exception as exc:
            log.warning("could not probe the broker's transaction isolation (%s)", exc)
            return
        if not self.broker_hides_aborted:
            log.warning(
                "processing.guarantee=exactly_once_v2 on a broker that shows aborted transactional "
                "records to read_committed consumers (the embedded broker does): exactly-once is weaker "
                "here -- consumers may read outputs of aborted transactions, and a restore after a crash "
                "may apply an aborted changelog write, so state can count records twice. Use Apache "
                "Kafka (STREAMHOUSE_BROKER_KIND=kafka) for exactly-once guarantees"
            )

    def _aux_consumer_conf(self, role: str) -> dict[str, Any]:
        conf = dict(self._consumer_base)
        # Kafka Streams' restore consumer also serves standby tasks
        layer = {"restore": "restore.consumer", "standby": "restore.consumer", "global": "global.consumer"}
        conf.update(self.config.client_overrides(layer.get(role, "consumer")))
        conf["group.id"] = f"{self.config.application_id}-{self.instance_id}-{role}"
        conf["client.id"] = f"{self._client_id}-{role}"
        return conf

    def _build_store_catalog(self) -> dict[str, dict[str, Any]]:
        """Store name -> sub-topology, partition count and key serde (for queries and metadata)."""
        catalog: dict[str, dict[str, Any]] = {}
        assert self.plan is not None
        for st in self.topology.subtopologies():
            pt = self.topology.build_processor_topology(st.id, self.task_config)
            for name, builder in pt.stores.items():
                if st.is_global:
                    catalog[name] = {
                        "subtopology": None,
                        "partitions": 1,
                        "global": True,
                        "key_serde": builder.key_serde,
                        "value_serde": builder.value_serde,
                    }
                elif st.id in self.plan.subtopologies:
                    catalog[name] = {
                        "subtopology": st.id,
                        "partitions": self.plan.subtopologies[st.id].partitions,
                        "global": False,
                        "key_serde": builder.key_serde,
                        "value_serde": builder.value_serde,
                    }
        return catalog

    @property
    def store_catalog(self) -> dict[str, dict[str, Any]]:
        return self._store_catalog

    # -- the stream thread ------------------------------------------------------------------------------
    def _run(self) -> None:
        cfg = self.config
        try:
            self._start_global()
            self.standby = (
                StandbyManager(
                    topology=self.topology,
                    task_config=self.task_config,
                    application_id=cfg.application_id,
                    state_dir=Path(cfg.state_dir),
                    consumer_config=self._aux_consumer_conf("standby"),
                    batch_records=cfg.max_poll_records,
                    markers=not cfg.exactly_once,
                )
                if cfg.num_standby_replicas > 0
                else None
            )
            self.factory = TaskFactory(
                topology=self.topology,
                task_config=self.task_config,
                application_id=cfg.application_id,
                state_dir=Path(cfg.state_dir),
                collector=self.collector,
                changelog_sink=self.collector.changelog_sink(),
                global_stores=self.global_state.stores if self.global_state else {},
                reader=self.reader,
                exactly_once=cfg.exactly_once,
                on_restore=self._on_restored,
                committed_offsets=self._committed_offsets,
            )
            assert self.plan is not None
            topics = self.plan.source_topics()
            if topics:
                self.consumer.subscribe(
                    topics,
                    on_assign=self._guarded(self._on_assign),
                    on_revoke=self._guarded(self._on_revoke),
                    on_lost=self._guarded(self._on_lost),
                )
            else:
                self.lifecycle.transition(State.RUNNING)
            while True:
                try:
                    self._loop()
                    break
                except FATAL_ERRORS as exc:
                    self._on_uncaught(exc, SHUTDOWN_CLIENT)
                    return
                except BaseException as exc:
                    if self.outage is not None and self.outage.tasks_migrated(exc):
                        self.drop_tasks(f"{type(exc).__name__}: {exc}", resume=True)
                        continue
                    if isinstance(exc, ProducerFencedError):
                        raise
                    response = self._decide(exc)
                    if response != REPLACE_THREAD or self.committer.fatal:
                        self._on_uncaught(exc, response)
                        return
                    self._replace_thread(exc)
        except ProducerFencedError as exc:
            self.fenced = True
            log.error("%s; shutting this instance down", exc)
            self._shutdown(clean=False, final=State.NOT_RUNNING)
            return
        except BaseException as exc:
            self._on_uncaught(exc)
            return
        self._shutdown(clean=True, final=State.NOT_RUNNING)

    def _start_global(self) -> None:
        assert self.plan is not None
        if not self.plan.global_topics:
            return
        gst = next(st for st in self.topology.subtopologies() if st.is_global)
        self.global_state = GlobalState(
            topology=self.topology,
            subtopology_id=gst.id,
            topic_partitions=self.plan.global_topics,
            task_config=self.task_config,
            collector=self.collector,
            application_id=self.config.application_id,
            state_dir=Path(self.config.state_dir),
            consumer_config=self._aux_consumer_conf("global"),
            batch_records=self.config.restore_batch_records,
            timeout_ms=self.config.restore_timeout_ms,
            silent_ahead_s=self.reader.silent_ahead_s,
        )
        self.restoring = True
        try:
            self.global_state.bootstrap()
        finally:
            self.restoring = False
            self.stats.restores.extend(self.global_state.progress)

    # -- contact with the cluster -------------------------------------------------------------------------
    def _on_stream_client_error(self, err: KafkaError) -> None:
        """error_cb of the stream consumer and producer (see OutageWatchdog.on_client_error); before the
        watchdog is set up, only logged."""
        if self.outage is None:
            self.connection_log.on_error(err)
        else:
            self.outage.on_client_error(err)

    def _on_producer_stats(self, raw: str) -> None:
        if self.outage is not None:
            self.outage.on_producer_stats(raw)

    def _wait_out_abandoned_commit(self, timeout_s: float) -> None:
        """The stream thread's turn while an abandoned offset commit holds the consumer (its tasks are
        already dropped): it serves the producer, whose statistics keep the watchdog informed, the
        interactive queries and the give-up deadline, and uses the consumer again once the commit has
        ended, which it does when the cluster answers."""
        self.committer.wait_for_abandoned(timeout_s)
        self._run_queries()
        if self.outage is not None:
            self.outage.give_up_if_expired()

    # -- OutageActions: the runtime's side of an outage's recovery (called on the stream thread) ----------
    def drop_tasks(self, reason: str, *, resume: bool) -> None:
        """Kafka Streams' handleLostAll: close every active task without committing (its stores fall
        back to the last commit), discard what the producer still holds of the uncommitted work, and
        report REBALANCING until tasks are assigned again."""
        registry = self.registry
        assert registry is not None and self.outage is not None
        keys = sorted(registry.tasks)
        self.outage.tasks_dropping(reason, keys, resume=resume)
        collector = self.collector
        if not self.config.exactly_once and collector is not None and self.producer is not None:
            # records of uncommitted work are produced again when it is redone; delivered now they would
            # only be orphans after the changelogs' last commit marker (in-flight ones may still land:
            # the restore's markers handle those, as after a crash)
            for producer in collector.producers:
                with contextlib.suppress(Exception):
                    producer.purge(in_queue=True, in_flight=False, blocking=False)
                    producer.poll(0)
            collector.first_error = None
            collector.changelog_offsets.clear()
            collector.marker_due.clear()
        for key in keys:
            active = registry.remove(key)
            if active is not None:
                with contextlib.suppress(Exception):
                    active.task.close(dirty=True)
        self._publish_assignment()
        self.lifecycle.transition(State.REBALANCING, strict=False)

    def check_topics(self) -> list[str]:
        assert self.plan is not None and self.client is not None
        return validate_topics(self.plan, self.client)

    def resume_tasks(self) -> None:
        """The cluster answers again: check the topics (a broker may have lost them), then resume the
        partitions the consumer still holds from their committed offsets. When the group dropped this
        member meanwhile, the consumer rejoins by itself and ``_on_assign`` creates the tasks."""
        assert self.registry is not None
        created = self.check_topics()
        if created:
            log.warning("the cluster had lost internal topic(s) %s: created them again", created)
        self.replace_producer()
        assignment = self.consumer.assignment()
        log.info(
            "the Kafka cluster at %s answers again; %s",
            self.config.bootstrap_servers,
            f"resuming {len(assignment)} partitions from the last commit" if assignment else "rejoining",
        )
        registry = self.registry
        idle = [
            tp
            for tp in assignment
            if not any(k in registry.tasks for k in registry.keys_for([(tp.topic, tp.partition)]))
        ]
        if not idle:
            return
        for tp in self.consumer.committed(idle, timeout=30):
            if tp.error is not None:
                raise KafkaException(tp.error)
            offset = tp.offset if tp.offset >= 0 else OFFSET_BEGINNING
            self.consumer.seek(TopicPartition(tp.topic, tp.partition, offset))
        keys = registry.keys_for([(tp.topic, tp.partition) for tp in idle])
        self._create_tasks(keys)
        self._publish_assignment()
        self._reconcile_standbys()
        self.lifecycle.transition(State.RUNNING, strict=False)

    def replace_producer(self) -> None:
        """Exactly-once: start over with a new transactional producer, as Kafka Streams' handleLostAll
        does under exactly_once_v2. The open transaction outlived ``transaction.timeout.ms`` during the
        outage: the coordinator has aborted it and bumped the producer epoch, so the old producer is
        fenced. ``init_transactions`` on the new one (same transactional.id) aborts whatever is left."""
        if not self.config.exactly_once:
            return
        old, conf = self.producer, self._producer_conf
        with contextlib.suppress(Exception):
            old.purge(in_queue=True, in_flight=True, blocking=False)
        producer = Producer(conf)
        try:
            producer.init_transactions(60)
        except KafkaException as exc:
            raise StreamhouseError(f"could not initialise the transactional producer again: {exc}") from exc
        self.producer = producer
        if self.outage is not None:
            self.outage.producer_replaced()
        collector, committer = self.collector, self.committer
        collector.replace_producer(producer)
        collector.first_error = None
        collector.changelog_offsets.clear()
        committer.producer = producer
        committer.txn_open = False
        committer.fatal = False
        log.info("exactly-once: a new transactional producer replaces the one of before the outage")

    # -- statistics ------------------------------------------------------------------------------------------
    def _on_stats(self, raw: str) -> None:
        try:
            import orjson

            data = orjson.loads(raw)
        except Exception:
            return
        if self.outage is not None:
            self.outage.cluster.observe_stats(data.get("brokers") or {})
            try:
                self.outage.check()
            except BaseException as exc:
                # raised by the loop after consume() returns, like a rebalance callback's error
                if self._callback_error is None:
                    self._callback_error = exc
        lag: dict[tuple[str, int], int] = {}
        for topic, t in (data.get("topics") or {}).items():
            for pid, p in (t.get("partitions") or {}).items():
                pnum = int(pid)
                if pnum < 0:
                    continue
                value = p.get("consumer_lag", -1)
                if value >= 0:
                    lag[(topic, pnum)] = value
        self.stats.consumer_lag = lag
