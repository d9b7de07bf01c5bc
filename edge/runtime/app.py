"""StreamsApp: runs a topology against Kafka (Kafka Streams' ``KafkaStreams`` for one instance).

This module holds the public API and the setup: it validates the topics, builds the clients and every
collaborator of the stream thread once, each with its dependencies given, and releases them at the end.
The collaborators, one job per module (Kafka Streams' names in brackets):

* :class:`~edge.runtime.stream_thread.StreamThread` (StreamThread) -- the loop: consume, process,
  punctuate, commit, answer queries; :mod:`edge.runtime.record_order` routes records to tasks;
* :class:`~edge.runtime.task_manager.TaskManager` (TaskManager) -- active, standby and global tasks:
  creation with restore, commit, rebalance (:mod:`edge.runtime.rebalance` adapts librdkafka's callbacks);
* :class:`~edge.runtime.streams_producer.StreamsProducer` (StreamsProducer) -- the producers, renewed
  after a fencing; :class:`~edge.runtime.commit.Committer` and
  :class:`~edge.runtime.producer.KafkaCollector` (TaskExecutor's commit, RecordCollector) -- the commit
  protocol and the records sent;
* :class:`~edge.runtime.restore.ChangelogReader` (the restore consumer of StoreChangelogReader);
* :class:`~edge.runtime.outage.OutageWatchdog` -- outage and fencing recovery;
* :class:`~edge.runtime.shutdown.Shutdown` -- what a failure leads to, and the shutdown sequence;
* :class:`~edge.runtime.stores.StoreProvider` (QueryableStoreProvider) -- the stores, as interactive
  queries and metrics see them.

:mod:`edge.runtime.signals` handles SIGTERM/SIGINT.

One instance = one stream thread + one HTTP thread (interactive queries and ``/metrics``) + one metadata
thread. The stream thread owns every task, store, consumer and producer; the HTTP thread never touches a
store directly -- it submits queries that the loop runs between batches, so stores need no locking.

Assignment: the instance subscribes to every source topic with group ``application.id``; task
(sub-topology, *p*) and its stores follow partition *p* -- cooperatively (only moved tasks pause) or
eagerly, see :mod:`edge.runtime.assignment`. See :mod:`edge.runtime.commit` for the commit order.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError

from edge.errors import StreamhouseError
from edge.kafka import BrokerProfile, KafkaClientConfig
from edge.processor.config import StreamsConfig as TaskConfig
from edge.processor.handlers import (
    DeadLetterQueueHandler,
)
from edge.runtime.assignment import JoinStateWatcher, plan_protocol, with_cgrp_debug
from edge.runtime.commit import COMMIT_TIMEOUT_S, Committer
from edge.runtime.config import StreamsConfig, StreamsConfigError
from edge.runtime.connectivity import ClusterWatchdog, ConnectionLogLimiter
from edge.runtime.global_state import GlobalState
from edge.runtime.metadata import InstanceInfo, MetadataService
from edge.runtime.outage import OutageWatchdog
from edge.runtime.producer import KafkaCollector
from edge.runtime.restore import ChangelogReader
from edge.runtime.shutdown import Shutdown, UncaughtExceptionHandler
from edge.runtime.standby import StandbyManager
from edge.runtime.state import Lifecycle, State, StateListener
from edge.runtime.statedir import lock_state_dir, persisted_instance_id, unlock_state_dir
from edge.runtime.stats import CountingHandler, RuntimeStats, build_handler
from edge.runtime.stores import TaskStoreProvider
from edge.runtime.stream_thread import Query, StreamThread
from edge.runtime.streams_producer import StreamsProducer
from edge.runtime.task_manager import TaskManager
from edge.runtime.tasks import TaskRegistry
from edge.runtime.topics import (
    TopicPlan,
    metadata_topic_name,
    plan_topics,
    validate_topics,
)

log = logging.getLogger(__name__)

#: the restore consumer's ``fetch.wait.max.ms`` unless the user sets one (see ``_aux_consumer_conf``)
RESTORE_FETCH_WAIT_MS = 10
#: the main consumer's ``fetch.wait.max.ms`` when some task reads several partitions, unless the user or
#: the broker profile sets one. Such a task pauses a partition buffering more than
#: ``buffered.records.per.partition`` records, and librdkafka drops a paused partition's prefetched
#: records: on resume they are fetched again, and that fetch waits behind any fetch the broker is holding
#: for partitions at their end, up to ``fetch.wait.max.ms`` (Kafka's 500 ms). Measured on Apache Kafka,
#: a 300k-record stream-stream join caught up in 39 s with 500 ms, 13 s with 100 ms, 11 s with no pauses.
#: (Kafka's consumer keeps a paused partition's fetched records.) The price: an idle consumer asks 10
#: times a second instead of twice.
GROUPED_FETCH_WAIT_MS = 100
#: librdkafka's (and Kafka's) ``max.partition.fetch.bytes`` default
LIBRDKAFKA_MAX_PARTITION_FETCH_BYTES = 1_048_576


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


class StreamsApp:
    def __init__(self, topology: Any, config: StreamsConfig | Mapping[str, Any], **objects: Any) -> None:
        if not isinstance(config, StreamsConfig):
            config = StreamsConfig.from_mapping(config, **objects)
        elif objects:
            config = config.with_overrides(**objects)
        self.config = config
        self.topology = resolve_topology(topology, config.topology_optimization)
        self.lifecycle = Lifecycle()
        self.stats = RuntimeStats()
        #: asks the stream thread to stop (close(), signals, a SHUTDOWN_APPLICATION request)
        self._stop = threading.Event()
        #: set as the shutdown starts (rebalances then take no tasks, outages drop and resume none)
        self._closing = threading.Event()
        self._thread: threading.Thread | None = None
        #: interactive queries waiting for the stream thread (run between batches)
        self._queries: queue.SimpleQueue[Query] = queue.SimpleQueue()
        self._uncaught_handler: UncaughtExceptionHandler | None = None
        self._lock_fd: int | None = None
        self.instance_id: str = ""
        self.advertised_server = config.application_server
        #: exactly-once only: the broker passed the aborted-records probe (None: not probed / unknown)
        self.broker_hides_aborted: bool | None = None
        #: librdkafka's log lines and errors of every client, connection failures rate-limited
        self.connection_log = ConnectionLogLimiter()
        # -- built once by _setup (start()); None before. The clients are None again once released.
        self.client: KafkaClientConfig | None = None
        self.plan: TopicPlan | None = None
        self.task_config: TaskConfig | None = None
        self._client_id = ""
        self._consumer_base: dict[str, Any] = {}
        #: the stream thread's producers (transactional under exactly-once; replaced after a fencing)
        self.producers: StreamsProducer | None = None
        self.collector: KafkaCollector | None = None
        self.consumer: Consumer | None = None
        #: how long the cluster has been unreachable (set up with the consumer's session timeout)
        self.watchdog: ClusterWatchdog | None = None
        #: outage and fencing recovery
        self.outage: OutageWatchdog | None = None
        #: the restorer: one consumer for every changelog restore
        self.reader: ChangelogReader | None = None
        #: the active tasks and the routes of their input partitions (owned by the task manager)
        self.registry: TaskRegistry | None = None
        #: the stores of the active tasks and the global ones, for interactive queries and metrics
        self.stores: TaskStoreProvider | None = None
        self.committer: Committer | None = None
        self.http: Any = None
        self.metadata: MetadataService | None = None
        self.tasks: TaskManager | None = None
        self._shutdown: Shutdown | None = None
        self._stream: StreamThread | None = None
        self._store_catalog: dict[str, dict[str, Any]] = {}

    # -- public API -----------------------------------------------------------------------------------
    @property
    def state(self) -> State:
        return self.lifecycle.state

    def add_state_listener(self, listener: StateListener) -> None:
        self.lifecycle.add_listener(listener)

    set_state_listener = add_state_listener

    @property
    def error(self) -> BaseException | None:
        """What ended the stream thread with an error (None while running, or after a clean shutdown)."""
        return None if self._shutdown is None else self._shutdown.error

    @property
    def fenced(self) -> bool:
        """A newer instance with our transactional.id fenced this one."""
        return self._shutdown is not None and self._shutdown.fenced

    @property
    def restoring(self) -> bool:
        """Stores are being restored (queries answer 503 meanwhile)."""
        return self.tasks is not None and self.tasks.restoring

    @property
    def global_state(self) -> GlobalState | None:
        return None if self.tasks is None else self.tasks.global_state

    @property
    def standby(self) -> StandbyManager | None:
        return None if self.tasks is None else self.tasks.standby

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
        assert self._stream is not None
        self._thread = threading.Thread(
            target=self._stream.run, name=f"streamhouse-{cfg.application_id}", daemon=True
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
            "join_index_max_bytes": cfg.join_index_max_bytes,
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
        producers = self.producers = StreamsProducer(
            pconf,
            exactly_once=cfg.exactly_once,
            with_sink_producer=any(st.sink_topics for st in self.topology.subtopologies()),
            sink_error_cb=self.connection_log.on_error,
            sink_stats_cb=self._on_sink_producer_stats,
        )
        self.collector = KafkaCollector(
            producers.producer,
            exactly_once=cfg.exactly_once,
            max_message_bytes=producers.max_message_bytes,
            sink_producer=producers.sink_producer,
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
        if any(len(st.source_topics) > 1 for st in self.plan.subtopologies.values()):
            main_conf.setdefault("fetch.wait.max.ms", GROUPED_FETCH_WAIT_MS)
        # cooperative (only moved tasks pause) unless upgrade.from or co-partitioned sources need eager
        self.protocol = plan_protocol(cfg, self.plan)
        main_conf["partition.assignment.strategy"] = self.protocol.strategy
        self.join_state = JoinStateWatcher(self.connection_log)
        if self.protocol.cooperative:
            # the member's join state, at once: a periodic commit waits out a join (StreamThread)
            main_conf["logger"] = self.join_state
            with_cgrp_debug(main_conf)
        self._main_conf = main_conf
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
            bootstrap_servers=cfg.bootstrap_servers,
            exactly_once=cfg.exactly_once,
            transaction_timeout_ms=cfg.transaction_timeout_ms,
            cluster_unavailable_timeout_ms=cfg.cluster_unavailable_timeout_ms,
            closing=self._closing.is_set,
        )
        self.collector.cluster_unreachable = lambda: not watchdog.reachable
        self.reader = ChangelogReader(
            self._aux_consumer_conf("restore"),
            batch_records=cfg.restore_batch_records,
            timeout_ms=cfg.restore_timeout_ms,
            silent_ahead_s=5.0 if client.profile is BrokerProfile.EMBEDDED else None,
        )
        self.registry = TaskRegistry(self.plan.subtopology_of_topic(), cfg.max_task_idle_ms)
        self.stores = TaskStoreProvider(self.registry, lambda: self.global_state)
        self.committer = Committer(
            self.consumer,
            producers.producer,
            self.collector,
            exactly_once=cfg.exactly_once,
            # exactly-once: librdkafka fails a record older than transaction.timeout.ms and the coordinator
            # aborts such a transaction: a commit still waiting then is aborted (Committer._txn_call)
            timeout_s=max(cfg.transaction_timeout_ms / 1000, 5.0) if cfg.exactly_once else COMMIT_TIMEOUT_S,
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
        self._build_stream_thread()

    def _build_stream_thread(self) -> None:
        """The stream thread and its task manager and shutdown sequence, on the clients built above."""
        cfg = self.config
        plan, client, metadata, outage = self.plan, self.client, self.metadata, self.outage
        consumer, collector, committer = self.consumer, self.collector, self.committer
        assert plan is not None and client is not None and metadata is not None and outage is not None
        assert consumer is not None and collector is not None and committer is not None
        assert self.registry is not None and self.reader is not None and self.task_config is not None
        assert self.stores is not None
        self.tasks = TaskManager(
            config=cfg,
            topology=self.topology,
            task_config=self.task_config,
            plan=plan,
            instance_id=self.instance_id,
            registry=self.registry,
            consumer=consumer,
            collector=collector,
            committer=committer,
            reader=self.reader,
            metadata=metadata,
            outage=outage,
            lifecycle=self.lifecycle,
            stats=self.stats,
            stop=self._stop,
            aux_consumer_conf=self._aux_consumer_conf,
            check_topics=lambda: validate_topics(plan, client),
            replace_producer=self._replace_producer,
            protocol=self.protocol,
        )
        self._shutdown = Shutdown(
            config=cfg,
            tasks=self.tasks,
            committer=committer,
            metadata=metadata,
            lifecycle=self.lifecycle,
            stats=self.stats,
            connection_log=self.connection_log,
            closing=self._closing,
            uncaught_handler=lambda: self._uncaught_handler,
            release=self._release_resources,
        )
        self._stream = StreamThread(
            config=cfg,
            client=client,
            plan=plan,
            consumer=consumer,
            collector=collector,
            committer=committer,
            reader=self.reader,
            metadata=metadata,
            outage=outage,
            tasks=self.tasks,
            stores=self.stores,
            shutdown=self._shutdown,
            stats=self.stats,
            stop=self._stop,
            closing=self._closing,
            queries=self._queries,
            replace_producer=self._replace_producer,
            fetch_bytes_per_partition=int(
                self._main_conf.get("max.partition.fetch.bytes", LIBRDKAFKA_MAX_PARTITION_FETCH_BYTES)
            ),
        )
        self._stream.listener.join_state = self.join_state

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
        overrides = self.config.client_overrides(layer.get(role, "consumer"))
        if role == "restore" and "fetch.wait.max.ms" not in overrides:
            # A restore reads to partition EOF, so its last fetch of every partition asks for data that
            # is not there: the broker holds it for fetch.wait.max.ms (500 ms by default) before
            # answering. Kafka's restore stops at the end offset and never waits for that fetch.
            conf["fetch.wait.max.ms"] = RESTORE_FETCH_WAIT_MS
        conf.update(overrides)
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

    # -- librdkafka callbacks of the stream thread's clients ------------------------------------------------
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

    def _on_sink_producer_stats(self, raw: str) -> None:
        if self.outage is not None:
            self.outage.on_sink_producer_stats(raw)

    def _on_stats(self, raw: str) -> None:
        """stats_cb of the stream consumer: served inside ``consume()``, so only once the thread runs."""
        if self._stream is not None:
            self._stream.on_stats(raw)

    # -- the clients ----------------------------------------------------------------------------------------
    def _replace_producer(self) -> None:
        """Exactly-once: start over with a new transactional producer, as Kafka Streams' handleLostAll
        does under exactly_once_v2. The open transaction outlived ``transaction.timeout.ms`` during the
        outage: the coordinator has aborted it and bumped the producer epoch, so the old producer is
        fenced. ``init_transactions`` on the new one (same transactional.id) aborts whatever is left."""
        if not self.config.exactly_once:
            return
        producers, collector, committer, outage = self.producers, self.collector, self.committer, self.outage
        assert (
            producers is not None and collector is not None and committer is not None and outage is not None
        )
        started = time.monotonic()
        producer = producers.renew()
        outage.producer_replaced()
        collector.replace_producer(producer)
        collector.first_error = None
        collector.changelog_offsets.clear()
        committer.producer = producer
        committer.txn_open = False
        committer.fatal = False
        # init_transactions waits for the coordinator to abort the old producer's transaction, which
        # needs every partition it wrote to have a leader: after a broker failure, most of the stall
        log.info(
            "exactly-once: a new transactional producer replaces the one of before the outage "
            "(init_transactions took %.1f s)",
            time.monotonic() - started,
        )

    def _release_resources(self) -> None:
        """Close every client (the stream thread's, the standby and global ones, restore, metadata, HTTP)
        and release the state directory; also after a failed start, with whatever was built."""
        committer = self.committer
        consumer_held = committer is not None and committer.consumer_held
        if consumer_held:
            # closing would wait behind it for as long as the cluster stays away
            log.warning(
                "an offset commit abandoned during the outage still holds the stream consumer: it is "
                "not closed (the group drops this member after its session timeout)"
            )
        elif self._stream is not None:
            self._stream.finish_rebalance()
        consumer = None if consumer_held else self.consumer
        tasks_clients = self.tasks.close_clients() if self.tasks is not None else []
        for name, action in (
            *tasks_clients,
            ("consumer", lambda: consumer is not None and consumer.close()),
            *(self.producers.close_actions() if self.producers is not None else []),
            ("restore", lambda: self.reader is not None and self.reader.close()),
            ("metadata", lambda: self.metadata and self.metadata.stop()),
            ("http", lambda: self.http and self.http.stop()),
        ):
            try:
                action()
            except Exception:
                log.exception("closing the %s client failed", name)
        # drop the client handles so librdkafka's threads end now, not whenever the app is collected
        self.consumer = None
        if self.producers is not None:
            self.producers.release()
        if self.collector is not None:
            self.collector.release_clients()
        if committer is not None:
            committer.release_clients()
        if self._stream is not None:
            self._stream.release_clients()
        if self._lock_fd is not None:
            with contextlib.suppress(OSError):
                unlock_state_dir(self._lock_fd)
            self._lock_fd = None
