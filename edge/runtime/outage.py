"""Outage and fencing recovery: what the stream thread does when the Kafka cluster goes away and comes back.

Kafka Streams spreads this over StreamThread (``handleLostAll``, TaskMigratedException) and its
producer; here it is one job with its own state, apart from the processing loop. The
:class:`~edge.runtime.connectivity.ClusterWatchdog` says how long the cluster has been unreachable;
:class:`OutageWatchdog` decides what follows:

* once the cluster has been gone for a session timeout, the group has dropped this member: the tasks are
  closed without a commit (``drop_tasks``, resume pending) and the instance reports REBALANCING;
* after ``cluster.unavailable.timeout.ms`` it gives up (:class:`ClusterUnavailableError`, fatal);
* once the cluster answers again the tasks resume from the last commit (``resume_tasks``); a short outage
  (tasks kept) only re-checks the topics, as a restarted broker may have lost them;
* which errors mean "the tasks migrated" (close them dirty and go on) rather than a bug or a zombie.

Exactly-once: an outage longer than ``transaction.timeout.ms`` ends with the coordinator aborting the open
transaction and bumping the producer epoch, so the producer of before the outage is fenced. That is task
migration, not a second instance with our transactional.id: the producer is replaced when the tasks resume
(``replace_producer``).

The runtime's side of the recovery (tasks, producer, topics) is reached through :class:`OutageActions`
(the stream thread), passed to :meth:`OutageWatchdog.check`, so this module knows nothing of how tasks
are held.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from typing import Protocol

from confluent_kafka import KafkaError, KafkaException

from edge.runtime.commit import ProducerFatalError, ProducerFencedError
from edge.runtime.connectivity import (
    ClusterUnavailableError,
    ClusterWatchdog,
    ConnectionLogLimiter,
    PartitionHealth,
)
from edge.runtime.producer import KafkaCollector, ProducerSendError, is_fenced

log = logging.getLogger(__name__)

#: Client errors that mean this member's tasks are gone (Kafka Streams' TaskMigratedException): the
#: group moved on without it, or the cluster cannot be reached. The tasks are closed without a commit and
#: resume from the last one when the group assigns them again.
MIGRATED_CODES = frozenset(
    {
        KafkaError.UNKNOWN_MEMBER_ID,
        KafkaError.ILLEGAL_GENERATION,
        KafkaError.REBALANCE_IN_PROGRESS,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError.NOT_COORDINATOR,
        KafkaError._TRANSPORT,
        KafkaError._ALL_BROKERS_DOWN,
        KafkaError._TIMED_OUT,
        KafkaError._MSG_TIMED_OUT,
        KafkaError._WAIT_COORD,
        # a transactional call's retriable coordinator error still there at the commit's deadline
        # (commit.RETRIABLE_TXN_CODES; a CI run's hard bounce of the controller: CONCURRENT_TRANSACTIONS
        # from AddOffsetsToTxn for the whole 10 s stopped the instance): Kafka Streams' producer retries
        # them until its timeout, and under exactly-once that TimeoutException is TaskCorruptedException
        KafkaError.CONCURRENT_TRANSACTIONS,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    }
)


class OutageActions(Protocol):
    """What recovering from an outage asks of the runtime (implemented by the stream thread's owner)."""

    def drop_tasks(self, reason: str, *, resume: bool) -> None:
        """Close every active task without committing (Kafka Streams' handleLostAll)."""

    def resume_tasks(self) -> None:
        """The cluster answers again: resume the partitions the consumer still holds from the commit."""

    def check_topics(self) -> list[str]:
        """Validate the topics, creating lost internal ones again; returns those created."""

    def replace_producer(self) -> None:
        """Exactly-once: start over with a new transactional producer (the old one is fenced)."""


class OutageWatchdog:
    """The stream thread's view of the cluster's availability, and the recovery it leads to.

    Its methods run on the stream thread (from the consumer's statistics callback and the loop), except
    :meth:`on_client_error` and the ``on_*_stats`` methods, which librdkafka calls from its own threads and
    which only feed the thread-safe :class:`ClusterWatchdog` and :class:`PartitionHealth`, and
    :meth:`health_reasons`, which the HTTP threads call.
    """

    def __init__(
        self,
        cluster: ClusterWatchdog,
        connection_log: ConnectionLogLimiter,
        *,
        bootstrap_servers: str,
        exactly_once: bool,
        transaction_timeout_ms: int,
        cluster_unavailable_timeout_ms: int,
        closing: Callable[[], bool],
    ) -> None:
        self.cluster = cluster
        self.connection_log = connection_log
        self.bootstrap_servers = bootstrap_servers
        self.exactly_once = exactly_once
        self.transaction_timeout_ms = transaction_timeout_ms
        self.cluster_unavailable_timeout_ms = cluster_unavailable_timeout_ms
        #: True once the instance shuts down: nothing is dropped, resumed or given up on any more
        self._closing = closing
        #: the tasks were dropped because the cluster was gone: resume them once it answers again
        self.resume_pending = False
        #: exactly-once: the producer of before an outage was fenced (logged once; replaced on resume)
        self.fenced_in_outage = False
        #: ``cluster.outages`` when last seen reachable (a new outage, even a short one, re-checks topics)
        self.outages_seen = 0
        #: the clients' partitions without a leader and records waiting for one (``health_reasons``)
        self.partitions = PartitionHealth()

    # -- signals from the clients -------------------------------------------------------------------
    @property
    def reachable(self) -> bool:
        return self.cluster.reachable

    @property
    def lost(self) -> bool:
        return self.cluster.lost

    def on_client_error(self, err: KafkaError) -> None:
        """error_cb of the stream consumer and producer: logged like every client's, and "all brokers
        down" starts the watchdog's clock (those two are never idle, so it means an outage)."""
        self.connection_log.on_error(err)
        self.cluster.connection_error(err)

    def on_producer_stats(self, raw: str) -> None:
        """The producer's broker states (served during a commit's flush, when the consumer's are not),
        and its partitions without a leader and records waiting for one (``/health``)."""
        with contextlib.suppress(Exception):
            import orjson

            data = orjson.loads(raw)
            self.cluster.observe_stats(data.get("brokers") or {})
            self.partitions.observe("producer", data)

    def on_sink_producer_stats(self, raw: str) -> None:
        """The sink producer's statistics: only its partitions and waiting records, for ``/health`` (its
        broker states stay away from the watchdog: with no output for a while its connections close,
        which is no outage)."""
        with contextlib.suppress(Exception):
            import orjson

            self.partitions.observe("sink producer", orjson.loads(raw))

    # -- /health -----------------------------------------------------------------------------------------
    def health_reasons(self, collector: KafkaCollector | None) -> list[str]:
        """What is wrong with the cluster as this instance sees it, one sentence each; empty when
        nothing is. ``/health`` answers DEGRADED with these while the instance is still RUNNING (a
        broker down leaves the cluster reachable, so nothing else says so until the commit gives up)."""
        reasons: list[str] = []
        if not self._closing() and not self.cluster.reachable:
            reasons.append(
                f"no broker of the Kafka cluster at {self.bootstrap_servers} has answered for "
                f"{self.cluster.unavailable_for:.0f} s (giving up after cluster.unavailable.timeout.ms="
                f"{self.cluster_unavailable_timeout_ms})"
            )
        leaderless = self.partitions.leaderless()
        if leaderless:
            count = sum(len(ps) for ps in leaderless.values())
            named = ", ".join(f"{topic}{ps}" for topic, ps in leaderless.items())
            reasons.append(
                f"{count} partition{'s' if count != 1 else ''} without a leader: {named} (their broker is "
                "down and no in-sync replica took over: replication factor 1, or every replica down)"
            )
        waiting = self.partitions.waiting()
        if waiting:
            named = ", ".join(f"{n} for {topic}" for topic, n in waiting.items())
            reasons.append(f"sends failing: records waiting for a partition leader ({named})")
        undelivered = collector.undelivered if collector is not None else None
        if undelivered is not None:
            remaining, since, timeout_s = undelivered
            reasons.append(
                f"sends failing: a commit has waited {time.monotonic() - since:.0f} s for {remaining} "
                f"record{'s' if remaining != 1 else ''} to be delivered (the instance stops after "
                f"{timeout_s:.0f} s)"
            )
        return reasons

    # -- classification --------------------------------------------------------------------------------
    def fenced_by_outage(self, exc: BaseException) -> bool:
        """Exactly-once, the tasks dropped by an outage and not resumed yet: is ``exc`` the fencing of the
        producer of before the outage? An outage longer than ``transaction.timeout.ms`` ends with the
        coordinator aborting the open transaction and bumping the producer epoch, so the old producer's
        next request (for records it still held; ``poll`` raises it as a fatal error) is fenced. That is
        Kafka Streams' TaskMigratedException, not a zombie: the producer is replaced on resume."""
        if not (self.exactly_once and self.resume_pending):
            return False
        cause = exc.__cause__ if isinstance(exc, ProducerFencedError) else exc
        if cause is None or not is_fenced(cause):
            return False
        if not self.fenced_in_outage:
            self.fenced_in_outage = True
            log.warning(
                "exactly-once: the transactional producer of before the outage was fenced (the coordinator "
                "aborted its open transaction after transaction.timeout.ms=%d); a new producer replaces it "
                "when the tasks resume (%s)",
                self.transaction_timeout_ms,
                exc,
            )
        return True

    def fenced_by_timeout(self, exc: ProducerFencedError) -> bool:
        """Exactly-once, no outage: was the producer fenced because its open transaction outlived
        ``transaction.timeout.ms``?

        A broker bounce can hold a transaction open that long without the cluster ever looking gone: a
        produce request to the dead leader waits out ``request.timeout.ms`` before the partition's new
        leader is found, and a hard-killed transaction coordinator's successor loads the transaction
        log only once the old one is fenced (6 s here, 9 s by default). The coordinator then aborts the
        transaction and bumps the epoch (``TransactionCoordinator.abortTimedOutTransactions``), so the
        next EndTxn or produce is fenced. Kafka Streams turns every such fencing into
        TaskMigratedException (``StreamsProducer.commitTransaction``, ``RecordCollectorImpl.
        recordSendError``): close the tasks dirty, a new producer, go on. A zombie is fenced by
        another incarnation's ``init_transactions`` instead, at any age of its transaction: one younger
        than the timeout cannot have been aborted by the coordinator, so that fencing still stops the
        instance. The tasks resume with a new producer (``replace_producer``, as after an outage).
        """
        age = exc.txn_age_s
        if not (self.exactly_once and age is not None and age * 1000 >= self.transaction_timeout_ms):
            return False
        log.warning(
            "exactly-once: the transactional producer was fenced with its transaction open for %.1f s, "
            "past transaction.timeout.ms=%d (the coordinator aborted it: task migration, not a zombie); "
            "closing the tasks without a commit and resuming them with a new producer (%s)",
            age,
            self.transaction_timeout_ms,
            exc,
        )
        return True

    def tasks_migrated(self, exc: BaseException) -> bool:
        """Did ``exc`` fail because the cluster is gone or the group dropped us (Kafka Streams'
        TaskMigratedException), rather than because of a bug or a bad record?"""
        if not isinstance(exc, Exception) or self._closing():
            return False
        if self.fenced_by_outage(exc):
            return True
        if isinstance(exc, ProducerFatalError):
            # the producer is unusable, not ours to keep: close the tasks, a new producer resumes them
            log.warning(
                "exactly-once: %s; closing the tasks without a commit, a new producer resumes them", exc
            )
            return self.exactly_once
        if isinstance(exc, ProducerFencedError):
            # by the coordinator's timeout (migration), else a newer instance with our transactional.id:
            # this one is a zombie and stops
            return self.fenced_by_timeout(exc)
        if not self.cluster.reachable:
            return True
        err = exc.args[0] if isinstance(exc, KafkaException) and exc.args else None
        if isinstance(exc, ProducerSendError):
            err = exc.error
        return isinstance(err, KafkaError) and err.code() in MIGRATED_CODES

    # -- the stream thread's checks -----------------------------------------------------------------------
    def check(self, actions: OutageActions) -> None:
        """On the stream thread (statistics callback): drop the tasks once the cluster has been gone for
        a session timeout, give up after ``cluster.unavailable.timeout.ms``, resume once it is back."""
        wd = self.cluster
        if self._closing():
            return
        self.give_up_if_expired()
        if wd.lost:
            if not self.resume_pending:
                actions.drop_tasks(
                    f"no broker of the Kafka cluster at {self.bootstrap_servers} answered for "
                    f"{wd.unavailable_for:.0f} s",
                    resume=True,
                )
            return
        if not wd.reachable:
            return
        if self.resume_pending:
            self.resume_pending = False
            self.outages_seen = wd.outages
            self.connection_log.reachable_again()
            actions.resume_tasks()
        elif wd.outages != self.outages_seen:
            # a short outage (the tasks were kept): the broker may still have restarted without its topics
            self.outages_seen = wd.outages
            self.connection_log.reachable_again()
            created = actions.check_topics()
            if created:
                log.warning("the cluster had lost internal topic(s) %s: created them again", created)

    def give_up_if_expired(self) -> None:
        wd = self.cluster
        if not self._closing() and wd.expired:
            raise ClusterUnavailableError(
                f"no broker of the Kafka cluster at {self.bootstrap_servers} answered for "
                f"{wd.unavailable_for:.0f} s (cluster.unavailable.timeout.ms="
                f"{self.cluster_unavailable_timeout_ms}); giving up. Start the cluster (or raise "
                "cluster.unavailable.timeout.ms) and restart the application"
            )

    # -- the tasks' side ------------------------------------------------------------------------------
    def tasks_dropping(self, reason: str, keys: list[tuple[int, int]], *, resume: bool) -> None:
        """The tasks ``keys`` are about to be closed without a commit; with ``resume``, because of the
        outage: they resume from the last commit when the cluster answers again."""
        if resume:
            self.resume_pending = True
        if resume and keys:
            log.warning(
                "%s: closing tasks %s without committing; they resume from the last commit when the "
                "cluster answers again (giving up after cluster.unavailable.timeout.ms=%d)",
                reason,
                keys,
                self.cluster_unavailable_timeout_ms,
            )

    def assigned(self, replace_producer: Callable[[], None]) -> None:
        """The group assigned partitions: back after an outage, they start from the commit (with a new
        transactional producer under exactly-once)."""
        if self.resume_pending:
            self.resume_pending = False
            self.connection_log.reachable_again()
            replace_producer()

    def producer_replaced(self) -> None:
        self.fenced_in_outage = False
