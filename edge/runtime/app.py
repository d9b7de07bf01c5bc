"""StreamsApp: runs a topology against Kafka (Kafka Streams' ``KafkaStreams`` for one instance).

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
import time
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from edge.errors import StreamhouseError
from edge.kafka import BrokerProfile
from edge.processor.config import StreamsConfig as TaskConfig
from edge.processor.handlers import (
    DeadLetterQueueHandler,
)
from edge.processor.task import StreamTask
from edge.runtime.commit import Committer, ProducerFencedError, TransactionAbortedError
from edge.runtime.config import (
    REPLACE_THREAD,
    SHUTDOWN_APPLICATION,
    SHUTDOWN_CLIENT,
    StreamsConfig,
    StreamsConfigError,
)
from edge.runtime.global_state import GlobalState
from edge.runtime.metadata import InstanceInfo, MetadataService
from edge.runtime.producer import KafkaCollector, is_fenced
from edge.runtime.restore import ChangelogReader, RestoreProgress
from edge.runtime.standby import StandbyManager, standby_wanted
from edge.runtime.state import Lifecycle, State, StateListener
from edge.runtime.statedir import lock_state_dir, persisted_instance_id, unlock_state_dir
from edge.runtime.stats import CountingHandler, RuntimeStats, build_handler
from edge.runtime.tasks import TaskFactory, TaskKey, TaskRegistry
from edge.runtime.topics import TopicPlan, ensure_internal_topics, metadata_topic_name, plan_topics

log = logging.getLogger(__name__)

UncaughtExceptionHandler = Callable[[BaseException], str]


def resolve_topology(obj: Any) -> Any:
    """Accept a Topology, a StreamsBuilder (``.build()``) or a zero-argument callable returning either."""
    if hasattr(obj, "subtopologies") and hasattr(obj, "build_processor_topology"):
        return obj
    if hasattr(obj, "build") and callable(obj.build):
        return resolve_topology(obj.build())
    if callable(obj):
        return resolve_topology(obj())
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
        self.topology = resolve_topology(topology)
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
        #: an exception raised inside a rebalance callback, re-raised by the loop after consume() returns
        self._callback_error: BaseException | None = None
        self._closing = False
        #: between a revocation and the next assignment (leaving the group then confuses some brokers)
        self._in_rebalance = False

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
        client = cfg.client()
        self.client = client
        self.plan = plan_topics(
            self.topology, cfg.application_id, client, replication_factor=cfg.replication_factor
        )
        dlq = cfg.errors_dead_letter_queue_topic_name
        from edge.kafka import TopicSpec, create_topics

        ensure_internal_topics(self.plan, client)
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
            "cache_max_bytes": cfg.cache_max_bytes,
            "state_dir": Path(cfg.state_dir),
            "commit_interval_ms": cfg.effective_commit_interval_ms,
            "changelog_collapse": cfg.changelog_collapse,
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
                **dict(cfg.producer_overrides),
            }
        )
        if cfg.exactly_once:
            pconf["transactional.id"] = f"{cfg.application_id}-{self.instance_id}"
            pconf["transaction.timeout.ms"] = cfg.transaction_timeout_ms
        self.producer = Producer(pconf)
        if cfg.exactly_once:
            try:
                # fences any previous incarnation with the same transactional.id and aborts its open txn
                self.producer.init_transactions(60)
            except KafkaException as exc:
                raise StreamhouseError(f"could not initialise the transactional producer: {exc}") from exc
        self.collector = KafkaCollector(self.producer, exactly_once=cfg.exactly_once)
        self.collector.dlq_topics = dlq_topics
        # consumers
        self._consumer_base = client.consumer(None, **dict(cfg.consumer_overrides))
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
                **dict(cfg.consumer_overrides),
            },
        )
        self.consumer = Consumer(main_conf)
        self.reader = ChangelogReader(
            self._aux_consumer_conf("restore"),
            batch_records=cfg.restore_batch_records,
            timeout_ms=cfg.restore_timeout_ms,
            silent_ahead_s=5.0 if cfg.broker_profile == BrokerProfile.EMBEDDED else None,
        )
        self.global_state = None
        self.registry = TaskRegistry(self.plan.subtopology_of_topic())
        self.committer = Committer(
            self.consumer, self.producer, self.collector, exactly_once=cfg.exactly_once
        )
        # HTTP (queries + metrics)
        if cfg.http_enabled:
            from edge.iq.server import QueryServer

            host, port = cfg.server_host_port
            try:
                self.http = QueryServer(self, cfg.http_bind_host, port)
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

    def _aux_consumer_conf(self, role: str) -> dict[str, Any]:
        conf = dict(self._consumer_base)
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
                except ProducerFencedError:
                    raise
                except BaseException as exc:
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

    def _loop(self) -> None:
        cfg = self.config
        consumer = self.consumer
        registry = self.registry
        assert registry is not None
        stats = self.stats
        committer = self.committer
        eos = cfg.exactly_once
        max_records = cfg.max_poll_records
        poll_s = cfg.poll_ms / 1000
        interval_s = cfg.effective_commit_interval_ms / 1000
        next_commit = time.monotonic() + interval_s
        next_housekeeping = 0.0
        uncommitted = 0
        perf = time.perf_counter
        while not self._stop.is_set():
            msgs = consumer.consume(max_records, poll_s)
            if self._callback_error is not None:
                exc, self._callback_error = self._callback_error, None
                raise exc
            if msgs:
                if eos and not committer.txn_open:
                    committer.begin()
                t0 = perf()
                route = registry.route
                first = msgs[0]
                parts = route.get(first.topic())
                task = parts.get(first.partition()) if parts is not None else None
                if (
                    task is not None
                    and len(route) == 1
                    and len(parts) == 1
                    and len(consumer.assignment()) == 1
                ):
                    # one task, one assigned partition: every message is this task's
                    n = task.process_batch(msgs, self._consumer_error)
                else:
                    n = self._process_grouped(msgs, route)
                stats.records_processed += n
                stats.batches += 1
                stats.process_seconds += perf() - t0
                uncommitted += n
            gs = self.global_state
            if gs is not None:
                gs.poll()
            if self.standby is not None:
                self.standby.poll()
            self.collector.poll()
            now = time.monotonic()
            if registry.tasks:
                now_ms = time.time_ns() // 1_000_000
                for active in registry.tasks.values():
                    if active.task.has_wall_clock_punctuations:
                        if eos:
                            committer.begin()
                        if active.task.punctuate_wall_clock(now_ms):
                            uncommitted += 1
            commit_requested = (
                any(a.task.commit_requested for a in registry.tasks.values()) if uncommitted else False
            )
            if now >= next_commit or commit_requested:
                if uncommitted or (gs is not None and gs.dirty):
                    self._commit(registry.tasks.values())
                    uncommitted = 0
                elif self.standby is not None:
                    self.standby.checkpoint_all()
                next_commit = now + interval_s
            self._run_queries()
            if now >= next_housekeeping:
                next_housekeeping = now + 1.0
                self._housekeeping()

    def _process_grouped(self, msgs: list[Any], route: dict[str, dict[int, StreamTask]]) -> int:
        """Hand each task its messages of the batch (per-partition order kept; unrouted ones skipped).

        A message carrying an error is handled after the messages before it were processed, as a
        per-message loop would."""
        groups: dict[StreamTask, list[Any]] = {}
        n = 0
        on_error = self._consumer_error
        for msg in msgs:
            err = msg.error()
            if err is not None:
                for task, batch in groups.items():
                    n += task.process_batch(batch, on_error)
                groups = {}
                on_error(err)
                continue
            parts = route.get(msg.topic())
            task = parts.get(msg.partition()) if parts is not None else None
            if task is not None:
                batch = groups.get(task)
                if batch is None:
                    groups[task] = [msg]
                else:
                    batch.append(msg)
        for task, batch in groups.items():
            n += task.process_batch(batch, on_error)
        return n

    def _commit(self, tasks: Any, *, closing: bool = False) -> None:
        extra = []
        if self.global_state is not None and self.global_state.dirty:
            extra.append(self.global_state)
        try:
            self.committer.commit(tasks, closing=closing, extra=extra)
        except TransactionAbortedError as exc:
            log.warning("%s; rebuilding the active tasks' state from their changelogs", exc)
            self._reinitialize_tasks()
            return
        if self.standby is not None:
            self.standby.checkpoint_all()

    def _reinitialize_tasks(self) -> None:
        """After an aborted transaction: drop uncommitted local state and resume from the last commit."""
        registry = self.registry
        assert registry is not None
        keys = list(registry.tasks)
        for key in keys:
            active = registry.remove(key)
            if active is not None:
                with contextlib.suppress(Exception):
                    active.task.close(dirty=True)
        self.collector.changelog_offsets.clear()
        assignment = self.consumer.assignment()
        if assignment:
            committed = self.consumer.committed(assignment, timeout=30)
            for tp in committed:
                offset = tp.offset if tp.offset >= 0 else -2  # OFFSET_BEGINNING
                self.consumer.seek(TopicPartition(tp.topic, tp.partition, offset))
        self._create_tasks(keys)

    def _consumer_error(self, err: KafkaError) -> None:
        if err.fatal():
            raise KafkaException(err)
        log.warning("consumer error: %s", err)

    def _housekeeping(self) -> None:
        stats = self.stats
        stats.tick_rate()
        registry = self.registry
        assert registry is not None
        sizes: dict[tuple[str, str], int] = {}
        for active in registry.tasks.values():
            for name, store in active.task.stores.items():
                with contextlib.suppress(Exception):
                    sizes[(name, active.id)] = store.approximate_num_entries()
        if self.global_state is not None:
            for name, store in self.global_state.stores.items():
                with contextlib.suppress(Exception):
                    sizes[(name, "global")] = store.approximate_num_entries()
        stats.store_sizes = sizes
        if self.standby is not None:
            stats.standby_store_sizes = self.standby.store_sizes()
            self._reconcile_standbys()
        md = self.metadata
        if md is not None and md.shutdown_requested_by is not None:
            log.error("instance %s requested the whole application to shut down", md.shutdown_requested_by)
            self._stop.set()

    def _run_queries(self) -> None:
        q = self._queries
        while True:
            try:
                fn, fut = q.get_nowait()
            except queue.Empty:
                return
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                fut.set_result(fn())
            except BaseException as exc:
                fut.set_exception(exc)

    # -- rebalance callbacks (run on the stream thread inside consume()) -------------------------------------
    def _guarded(self, callback: Callable[[Consumer, list[TopicPartition]], None]) -> Callable[..., None]:
        """Never let an exception escape a rebalance callback (librdkafka would leave the rebalance
        half done and ``close()`` would hang); the loop re-raises it after ``consume()`` returns."""

        def run(consumer: Consumer, partitions: list[TopicPartition]) -> None:
            self._in_rebalance = callback == self._on_revoke
            if self._closing and callback != self._on_revoke:
                return
            try:
                callback(consumer, partitions)
            except BaseException as exc:
                log.debug("rebalance callback failed: %s", exc)
                if self._callback_error is None:
                    self._callback_error = exc

        return run

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.stats.rebalances += 1
        self.lifecycle.transition(State.REBALANCING, strict=False)
        registry = self.registry
        assert registry is not None
        keys = [
            k
            for k in registry.keys_for([(tp.topic, tp.partition) for tp in partitions])
            if k not in registry.tasks
        ]
        log.info("assigned %d partitions -> tasks %s", len(partitions), sorted(keys))
        consumer.assign(partitions)
        self._create_tasks(keys)
        self._publish_assignment()
        self._reconcile_standbys()
        self.lifecycle.transition(State.RUNNING, strict=False)

    def _create_tasks(self, keys: list[TaskKey]) -> None:
        registry = self.registry
        assert registry is not None
        if self.standby is not None:
            for key in keys:
                self.standby.release(key)
        self.restoring = True
        try:
            created = self.factory.create(keys, should_stop=self._stop.is_set)
        finally:
            self.restoring = False
        for active in created:
            registry.add(active)

    def _on_restored(self, progress: RestoreProgress) -> None:
        stats = self.stats
        stats.restores = [
            p for p in stats.restores if not (p.task_id == progress.task_id and p.store == progress.store)
        ]
        stats.restores.append(progress)
        stats.restored_records += progress.restored
        # wall-clock time of the restore passes (partitions restored together overlap in time)
        stats.restore_seconds = self.reader.total_seconds

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        registry = self.registry
        assert registry is not None
        self.lifecycle.transition(State.REBALANCING, strict=False)
        keys = [
            k
            for k in registry.keys_for([(tp.topic, tp.partition) for tp in partitions])
            if k in registry.tasks
        ]
        if not keys:
            return
        log.info("revoking tasks %s: committing and closing them", sorted(keys))
        committed = False
        try:
            self._commit(list(registry.tasks.values()), closing=True)
            committed = True
        except BaseException:
            with contextlib.suppress(Exception):
                self.committer.abort()
            raise
        finally:
            for key in keys:
                active = registry.remove(key)
                if active is not None:
                    with contextlib.suppress(Exception):
                        active.task.close(dirty=not committed)
            self._publish_assignment()

    def _on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        registry = self.registry
        assert registry is not None
        log.warning(
            "lost partitions %s (session expired): closing their tasks without committing", partitions
        )
        with contextlib.suppress(Exception):
            self.committer.abort()
        for key in list(registry.tasks):
            active = registry.remove(key)
            if active is not None:
                with contextlib.suppress(Exception):
                    active.task.close(dirty=True)
        self._publish_assignment()

    def _publish_assignment(self) -> None:
        registry = self.registry
        if self.metadata is None or registry is None:
            return
        active: dict[int, list[int]] = {}
        for st, p in sorted(registry.tasks):
            active.setdefault(st, []).append(p)
        standby: dict[int, list[int]] = {}
        if self.standby is not None:
            for st, p in sorted(self.standby.tasks):
                standby.setdefault(st, []).append(p)
        self.metadata.update_local(active=active, standby=standby)

    def _reconcile_standbys(self) -> None:
        sm = self.standby
        if sm is None or self.plan is None or self.registry is None:
            return
        live = self.metadata.live_instances() if self.metadata else []
        wanted: set[TaskKey] = set()
        for st_plan in self.plan.subtopologies.values():
            if st_plan.id not in self._standby_eligible():
                continue
            for p in range(st_plan.partitions):
                key = (st_plan.id, p)
                if key in self.registry.tasks:
                    continue
                owner = self.metadata.owner_of(st_plan.id, p) if self.metadata else None
                if standby_wanted(
                    self.instance_id, owner, live, st_plan.partitions, p, self.config.num_standby_replicas
                ):
                    wanted.add(key)
        before = set(sm.tasks)
        sm.reconcile(wanted)
        if set(sm.tasks) != before:
            self._publish_assignment()

    def _standby_eligible(self) -> set[int]:
        cached = getattr(self, "_eligible_cache", None)
        if cached is None:
            assert self.plan is not None and self.standby is not None
            cached = {st for st in self.plan.subtopologies if self.standby.eligible(st)}
            self._eligible_cache = cached
        return cached

    # -- failure and shutdown -------------------------------------------------------------------------------
    def _decide(self, exc: BaseException) -> str:
        if not isinstance(exc, Exception):
            return SHUTDOWN_CLIENT  # KeyboardInterrupt / SystemExit: never swallowed
        if self._uncaught_handler is None:
            return self.config.uncaught_exception_response
        try:
            response = self._uncaught_handler(exc) or SHUTDOWN_CLIENT
        except Exception:
            log.exception("the uncaught exception handler itself failed")
            return SHUTDOWN_CLIENT
        if response not in (SHUTDOWN_CLIENT, SHUTDOWN_APPLICATION, REPLACE_THREAD):
            log.error("uncaught exception handler answered %r; shutting the instance down", response)
            return SHUTDOWN_CLIENT
        return response

    def _replace_thread(self, exc: BaseException) -> None:
        """Kafka's REPLACE_THREAD: drop everything since the last commit and resume from it.

        Under exactly-once the open transaction is aborted and the active tasks' stores are wiped and
        rebuilt from their (committed) changelogs; under at-least-once the tasks are closed without a
        commit and reopened from their checkpoints. Input resumes at the committed offsets.
        """
        self.stats.replaced_threads += 1
        log.error(
            "stream thread failed (%s: %s); replacing it: resuming from the last commit",
            type(exc).__name__,
            exc,
        )
        self.committer.abort()
        self.lifecycle.transition(State.REBALANCING, strict=False)
        self._reinitialize_tasks()
        self.lifecycle.transition(State.RUNNING, strict=False)

    def _on_uncaught(self, exc: BaseException, response: str | None = None) -> None:
        self.error = exc
        if response is None:
            response = self._decide(exc)
        if isinstance(exc, KafkaException) and is_fenced(exc):
            self.fenced = True
        log.error(
            "stream thread failed (%s: %s); response: %s",
            type(exc).__name__,
            exc,
            response,
            exc_info=exc if not isinstance(exc, StreamhouseError) else None,
        )
        if response == SHUTDOWN_APPLICATION and self.metadata is not None:
            self.metadata.update_local(shutdown=True)
            time.sleep(0.5)
        self._shutdown(clean=False, final=State.ERROR)

    def _shutdown(self, *, clean: bool, final: State) -> None:
        self._closing = True
        pending = State.PENDING_SHUTDOWN if final is State.NOT_RUNNING else State.PENDING_ERROR
        self.lifecycle.transition(pending, strict=False)
        registry = self.registry
        if registry is not None and registry.tasks:
            if clean:
                try:
                    self._commit(list(registry.tasks.values()), closing=True)
                except Exception:
                    log.exception("final commit failed; closing without it")
                    clean = False
            if not clean:
                with contextlib.suppress(Exception):
                    self.committer.abort()
            for key in list(registry.tasks):
                active = registry.remove(key)
                if active is not None:
                    try:
                        active.task.close(dirty=not clean)
                    except Exception:
                        log.exception("closing task %s failed", active.id)
        self._release_resources()
        self.lifecycle.transition(final, strict=False)

    def _finish_rebalance(self, timeout_s: float = 8.0) -> None:
        """Let a rebalance we are in the middle of complete before leaving the group.

        The embedded broker never completes a rebalance whose member leaves between its revocation and
        the next assignment (the remaining members loop on "rebalance in progress"), so a shutdown that
        starts inside a rebalance first rejoins (taking no tasks: ``_closing`` is set), then leaves.
        """
        consumer = getattr(self, "consumer", None)
        if consumer is None or not self._in_rebalance:
            return
        deadline = time.monotonic() + timeout_s
        with contextlib.suppress(Exception):
            while self._in_rebalance and time.monotonic() < deadline:
                consumer.consume(100, 0.1)

    def _release_resources(self) -> None:
        self._finish_rebalance()
        for name, action in (
            ("standby", lambda: self.standby and self.standby.close()),
            ("global", lambda: self.global_state and self.global_state.close()),
            ("consumer", lambda: getattr(self, "consumer", None) and self.consumer.close()),
            ("producer", lambda: getattr(self, "producer", None) and self.producer.flush(5)),
            ("restore", lambda: getattr(self, "reader", None) and self.reader.close()),
            ("metadata", lambda: self.metadata and self.metadata.stop()),
            ("http", lambda: self.http and self.http.stop()),
        ):
            try:
                action()
            except Exception:
                log.exception("closing the %s client failed", name)
        self.standby = None
        self.global_state = None
        # drop the client handles so librdkafka's threads end now, not whenever the app is collected
        for holder, names in (
            (self, ("producer", "consumer")),
            (getattr(self, "collector", None), ("producer", "_produce", "_poll")),
            (getattr(self, "committer", None), ("producer", "consumer")),
        ):
            for name in names:
                if holder is not None and hasattr(holder, name):
                    setattr(holder, name, None)
        if self._lock_fd is not None:
            with contextlib.suppress(OSError):
                unlock_state_dir(self._lock_fd)
            self._lock_fd = None

    # -- statistics ------------------------------------------------------------------------------------------
    def _on_stats(self, raw: str) -> None:
        try:
            import orjson

            data = orjson.loads(raw)
        except Exception:
            return
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
