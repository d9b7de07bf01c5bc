"""The commit protocol -- the one place that knows the order in which a commit happens.

The rule: **a store is never ahead of the committed input offsets** -- after a crash at any point the
state a task resumes with is exactly the state of the input offsets it resumes from. Stores of active
tasks buffer their writes in memory (``defer_writes``) and reach disk only in step 6, after the commit.

At-least-once::

    1. flush every task's stores      (caches -> downstream processors/sinks + changelog records;
                                       RocksDB writes stay in the stores' buffers)
    2. end each changelog partition written since the last commit with a commit marker carrying the
       task's input positions (:mod:`edge.runtime.markers`)
    3. flush the producer              (wait for every ack; a failed send aborts the commit)
    4. commit input offsets            (synchronously, to the consumer group): this validates the markers
    5. write the buffered store writes to RocksDB (one WriteBatch per store, WAL fsynced)
    6. write local checkpoint files    (changelog offsets the stores now reflect: the markers')

A crash before 4 leaves the previous offsets committed, the stores at the previous commit and the
changelog with records after its last valid marker: the restore stops at that marker and compensates
the orphans. A crash between 4 and 5 leaves the stores (and checkpoints) one commit behind: the restore
re-applies the changelog up to the new marker. A crash between 5 and 6 only makes the next restore
re-apply records the store already holds (changelog records are idempotent puts).

Exactly-once v2: steps 2-4 are one Kafka transaction -- outputs, changelog records and the input offsets
(``send_offsets_to_transaction``) become visible atomically at ``commit_transaction``; no markers (an
aborted transaction's records are invisible to read_committed consumers on a broker that hides them --
see the startup probe in :mod:`edge.runtime.app`). Stores are written after ``commit_transaction``, so
they hold committed state only, and a checkpoint is written every ``EOS_CHECKPOINT_RECORDS`` changelog
records (and on a clean close): a task closed without a commit -- an aborted transaction, a fencing, a
crash -- restores only the committed changelog records after it. A commit that failed on the client but
committed on the broker is no exception: its records follow the checkpoint and are restored.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from edge.errors import StreamhouseError
from edge.runtime.producer import KafkaCollector, ProducerFatalError, is_fenced
from edge.runtime.tasks import ActiveTask

log = logging.getLogger(__name__)


class ProducerFencedError(StreamhouseError):
    """The transactional producer was fenced: by another instance with our transactional.id (a zombie,
    which must stop), or by the coordinator aborting a transaction older than ``transaction.timeout.ms``
    (task migration, see :meth:`edge.runtime.outage.OutageWatchdog.tasks_migrated`). ``txn_age_s`` is
    how long the open transaction had been running when the fencing surfaced (None: none was open)."""

    def __init__(self, message: str, *, txn_age_s: float | None = None) -> None:
        super().__init__(message)
        self.txn_age_s = txn_age_s


class TransactionAbortedError(StreamhouseError):
    """The open transaction was aborted; stores of active tasks must be rebuilt from their changelogs."""


#: Coordinator errors a transactional call may return without librdkafka's retriable flag (seen:
#: CONCURRENT_TRANSACTIONS from AddOffsetsToTxn while a hard-bounced coordinator's successor completed
#: the previous transaction); Java's TransactionManager re-enqueues each of them.
RETRIABLE_TXN_CODES = frozenset(
    {
        KafkaError.CONCURRENT_TRANSACTIONS,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError.NOT_COORDINATOR,
    }
)


#: How long a transactional call may outlive its own timeout before the producer counts as stuck.
#: librdkafka returns a retriable timeout by then, unless it waits without a deadline: its
#: ``rd_kafka_send_offsets_to_transaction`` waits with ``RD_POLL_INFINITE`` for the TxnOffsetCommit to
#: the group coordinator, whose coordinator request never checks its timeout, and when the cached
#: coordinator's broker left the cluster (a clean shutdown removes it from the metadata and
#: librdkafka decommissions it) nothing wakes that request up again: confluentinc/librdkafka issues
#: 5456 and 5511, seen in a clean bounce of the group coordinator's node (the stream thread blocked
#: for ten minutes, the instance still up).
STUCK_GRACE_S = 5.0

#: An offset commit's errors that Java's consumer retries within ``commitSync``'s timeout
#: (``ConsumerCoordinator.OffsetCommitResponseHandler``: the coordinator loading the group or moving to
#: another node). librdkafka's synchronous commit returns them: a clean bounce of the group coordinator's
#: node answered COORDINATOR_LOAD_IN_PROGRESS, and taking that for task migration closed every task
#: without a commit, so an at-least-once app processed the input after its last commit again.
RETRIABLE_COMMIT_CODES = frozenset(
    {
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError.NOT_COORDINATOR,
        KafkaError.REQUEST_TIMED_OUT,
        KafkaError.UNKNOWN_TOPIC_OR_PART,
        KafkaError._WAIT_COORD,
    }
)

#: how long a commit waits for the cluster before it fails: Kafka Streams' bound, Java's ``max.block.ms``
#: for ``commitTransaction`` and ``default.api.timeout.ms`` for ``commitSync`` (both 60 s by default)
COMMIT_TIMEOUT_S = 60.0

#: exactly-once rewrites a task's checkpoint once its changelogs moved more than this many records past
#: the last one (Kafka's ``StateManagerUtil.OFFSET_DELTA_THRESHOLD_FOR_CHECKPOINT``)
EOS_CHECKPOINT_RECORDS = 10_000


def _is_fatal(exc: KafkaException) -> bool:
    err = exc.args[0] if exc.args else None
    return isinstance(err, KafkaError) and err.fatal()


class Committer:
    def __init__(
        self,
        consumer: Any,
        producer: Any,
        collector: KafkaCollector,
        *,
        exactly_once: bool,
        timeout_s: float = COMMIT_TIMEOUT_S,
    ) -> None:
        self.consumer = consumer
        self.producer = producer
        self.collector = collector
        self.exactly_once = exactly_once
        #: how long a commit may wait for the cluster (exactly-once: ``transaction.timeout.ms``, see
        #: :meth:`_txn_call`)
        self.timeout_s = timeout_s
        self.txn_open = False
        #: when the open transaction began (monotonic seconds): the coordinator aborts one that outlives
        #: transaction.timeout.ms, which is what tells its fencing from a zombie's
        self.txn_began = 0.0
        #: set once the producer hit a fatal error (fenced): it can do nothing more, not even abort
        self.fatal = False
        self.commits = 0
        #: offset commits repeated after a retriable coordinator error (RETRIABLE_COMMIT_CODES)
        self.commit_retries = 0
        self.commit_seconds_total = 0.0
        self.last_commit_seconds = 0.0
        #: set by the runtime: True once the cluster has been gone for a session timeout (the group has
        #: dropped this member, so an offset commit still waiting can only fail)
        self.cluster_lost: Callable[[], bool] = lambda: False
        #: an abandoned offset commit still waiting in librdkafka (its done event and outcome)
        self._abandoned: tuple[threading.Event, list[BaseException]] | None = None

    @property
    def consumer_held(self) -> bool:
        """An abandoned offset commit still holds the consumer.

        confluent-kafka serializes the calls on one client: while the commit waits in librdkafka, any
        other call on the consumer (``consume``, ``close``, ``committed``) waits behind it, for as long
        as the cluster stays away. A thread dump of the broker-stop trial showed the stream thread in
        ``consume`` behind such a commit, unable to serve the statistics that would make it give up.
        """
        abandoned = self._abandoned
        if abandoned is None:
            return False
        done, outcome = abandoned
        if not done.is_set():
            return True
        self._abandoned = None
        if outcome:
            log.info("the offset commit abandoned during the outage ended with: %s", outcome[0])
        else:
            log.info("the offset commit abandoned during the outage went through once the cluster answered")
        return False

    def wait_for_abandoned(self, timeout_s: float) -> None:
        """Wait up to ``timeout_s`` for an abandoned commit to end, serving the producer meanwhile."""
        abandoned = self._abandoned
        if abandoned is None:
            return
        done = abandoned[0]
        deadline = time.monotonic() + timeout_s
        while not done.wait(0.05):
            self.collector.poll()
            if time.monotonic() >= deadline:
                return

    def commit_offsets(self, tps: list[TopicPartition]) -> None:
        """A synchronous offset commit that gives up, as Java's ``commitSync`` does after
        ``default.api.timeout.ms``.

        librdkafka's synchronous commit can wait for the group coordinator for as long as no broker
        answers (librdkafka issue 3740). A broker stopped while a commit was in flight left the stream
        thread in ``consumer.commit`` for minutes (seen in a thread dump of the broker-restart trial),
        and the instance RUNNING: the consumer's statistics, which tell the watchdog the cluster is gone,
        are served only while the thread polls. So the commit runs on a helper thread, and the stream
        thread waits for it while serving its producer's statistics and errors (which feed the watchdog
        too). It stops waiting once the cluster is lost or after ``timeout_s`` and raises a
        ``_TIMED_OUT`` KafkaException: the runtime then drops its tasks, as Kafka Streams does when its
        partitions are lost, and resumes from the last commit. A commit left waiting completes or fails
        on its own once the cluster is back; the offsets it carries are those of records already
        flushed, so it can only confirm work that is done. Until it ends it holds the consumer (see
        :attr:`consumer_held`): the runtime leaves the consumer alone meanwhile.
        """
        if self.consumer_held:
            raise KafkaException(
                KafkaError(KafkaError._TIMED_OUT, "an earlier offset commit still waits for the cluster")
            )
        outcome: list[BaseException] = []
        done = threading.Event()
        deadline = time.monotonic() + self.timeout_s
        consumer = self.consumer

        def run() -> None:
            backoff = 0.1
            try:
                while True:
                    try:
                        consumer.commit(offsets=tps, asynchronous=False)
                        return
                    except KafkaException as exc:
                        err = exc.args[0] if exc.args else None
                        code = err.code() if isinstance(err, KafkaError) else None
                        if code not in RETRIABLE_COMMIT_CODES or time.monotonic() + backoff >= deadline:
                            raise
                        self.commit_retries += 1
                        log.info("offset commit failed with %s; retrying in %.1f s", err, backoff)
                        time.sleep(backoff)
                        backoff = min(backoff * 2, 1.0)
            except BaseException as exc:  # handed to the stream thread
                outcome.append(exc)
            finally:
                done.set()

        threading.Thread(target=run, name="streamhouse-offset-commit", daemon=True).start()
        while not done.wait(0.05):
            self.collector.poll()
            lost = self.cluster_lost()
            if lost or time.monotonic() >= deadline:
                self._abandoned = (done, outcome)
                why = "the cluster is unreachable" if lost else f"no answer within {self.timeout_s:g} s"
                where = ", ".join(f"{tp.topic}-{tp.partition}@{tp.offset}" for tp in tps[:5])
                more = " ..." if len(tps) > 5 else ""
                raise KafkaException(
                    KafkaError(KafkaError._TIMED_OUT, f"offset commit abandoned ({why}): {where}{more}")
                )
        if outcome:
            raise outcome[0]

    def release_clients(self) -> None:
        """At shutdown, once the clients are closed: drop the handles (see KafkaCollector.release_clients)."""
        self.producer = self.consumer = None

    # -- transactions -------------------------------------------------------------------------------
    @property
    def txn_age_s(self) -> float | None:
        """Seconds since the open transaction began; None when none is open."""
        return time.monotonic() - self.txn_began if self.txn_open else None

    def begin(self) -> None:
        if self.exactly_once and not self.txn_open:
            try:
                self.producer.begin_transaction()
            except KafkaException as exc:
                self._raise_txn(exc, "begin")
            self.txn_open = True
            self.txn_began = time.monotonic()

    def abort(self) -> None:
        if not (self.exactly_once and self.txn_open) or self.fatal:
            self.txn_open = False
            return
        age = self.txn_age_s
        self.txn_open = False
        try:
            self.producer.abort_transaction(self.timeout_s)
        except KafkaException as exc:
            if is_fenced(exc):
                self.fatal = True
                raise ProducerFencedError(
                    f"producer fenced while aborting a transaction open for {age or 0:.1f} s: {exc}",
                    txn_age_s=age,
                ) from exc
            if _is_fatal(exc):
                self.fatal = True
                raise ProducerFatalError(
                    f"the transactional producer failed fatally while aborting a transaction open for "
                    f"{age or 0:.1f} s: {exc.args[0]}"
                ) from exc
            raise
        finally:
            self.collector.first_error = None
            self.collector.changelog_offsets.clear()

    def _txn_call(self, step: str, call: Callable[[float], object], deadline: float) -> None:
        """``call(timeout)`` again while it fails with a retriable error, until ``deadline``.

        librdkafka's contract for ``send_offsets_to_transaction`` and ``commit_transaction``: a
        retriable error (CONCURRENT_TRANSACTIONS while the coordinator still completes the previous
        transaction's markers, COORDINATOR_LOAD_IN_PROGRESS or NOT_COORDINATOR while a bounced
        coordinator's successor loads the transaction log, a timeout) leaves the transaction as it was
        and the call may simply be repeated. Java's producer repeats those requests itself
        (``TransactionManager``'s handlers re-enqueue on them), so Kafka Streams'
        ``StreamsProducer.commitTransaction`` never sees them; here the committer repeats the call.

        The deadline is the committer's timeout, ``transaction.timeout.ms``. Kafka Streams waits up to
        ``max.block.ms`` (60 s) in ``commitTransaction``, but its producer never fails a record for
        waiting (``delivery.timeout.ms`` = ``Integer.MAX_VALUE``), while librdkafka caps a
        transactional producer's ``message.timeout.ms`` at ``transaction.timeout.ms``; and the
        coordinator aborts a transaction past that age at its next scan (every 10 s). Waiting on (to 60
        s) was measured on 2026-11-28: what it gained came from the abort that a record's timeout
        then forced, and a commit that outlived the coordinator's scan was fenced, which costs a new
        producer. So at the deadline of ``send_offsets_to_transaction`` the transaction is aborted
        here, while the producer can still do it: the tasks resume from the
        last commit with the same producer (:class:`TransactionAbortedError`), where the error passed
        on used to close every task without a commit and replace the producer (task migration). A
        ``commit_transaction`` that timed out cannot be aborted: librdkafka goes on committing in the
        background and refuses the abort (``_CONFLICT``). Then, and when the abort fails too, or the
        cluster is gone (:attr:`cluster_lost`, which also ends the wait at once), the last error goes
        on to :meth:`_raise_txn`.
        """
        while True:
            try:
                call(max(deadline - time.monotonic(), 1.0))
                return
            except KafkaException as exc:
                err = exc.args[0] if exc.args else None
                retriable = (
                    isinstance(err, KafkaError)
                    and (err.retriable() or err.code() in RETRIABLE_TXN_CODES)
                    and not err.fatal()
                    and not err.txn_requires_abort()
                )
                if not retriable or self.cluster_lost():
                    self._raise_txn(exc, step)
                if time.monotonic() >= deadline:
                    if step == "commit_transaction":
                        # a timed-out commit goes on in librdkafka's background ("resumable"), which
                        # refuses an abort meanwhile (_CONFLICT, seen in a hard bounce)
                        self._raise_txn(exc, step)
                    self._abort_at_deadline(exc, step)
                log.info("exactly-once: %s failed with a retriable error (%s); retrying", step, err)
                self.collector.poll()
                time.sleep(0.1)

    def _abort_at_deadline(self, exc: KafkaException, step: str) -> None:
        """``step`` still failed with a retriable error at the commit's deadline: abort the transaction
        and raise :class:`TransactionAbortedError`, or, when the abort fails, what it raised (fenced,
        fatal) or else ``exc`` (see :meth:`_txn_call`)."""
        age = self.txn_age_s
        try:
            self.abort()  # a fenced or fatal abort raises its own error
        except KafkaException as abort_exc:
            log.warning(
                "exactly-once: aborting the transaction open for %.1f s failed too (%s) after %s "
                "outlived the commit's deadline",
                age or 0,
                abort_exc,
                step,
            )
            raise exc from None
        raise TransactionAbortedError(
            f"transaction aborted: {step} still failed after {self.timeout_s:g} s "
            f"(transaction.timeout.ms), its transaction open for {age or 0:.1f} s: {exc.args[0]}"
        ) from exc

    def _bounded(self, step: str, call: Callable[[], object], timeout_s: float) -> None:
        """``call()`` (a transactional call given ``timeout_s``) on a helper thread, the stream thread
        serving the producer meanwhile; if it has not returned ``STUCK_GRACE_S`` after its timeout, the
        producer is stuck in librdkafka (see :data:`STUCK_GRACE_S`) and raises
        :class:`ProducerFatalError`.

        A stuck producer can do nothing more (librdkafka refuses every other transactional call while
        one is in progress), so it is abandoned to the helper thread, which keeps it alive until the call
        ends, if ever: the tasks close without a commit and resume with a new producer, whose
        ``init_transactions`` fences this one and aborts its transaction, as after any fatal producer
        error. The helper thread costs about 0.14 ms per commit (measured on the loaded 2-core machine),
        beside a commit's round trips to the coordinators."""
        outcome: list[BaseException] = []
        done = threading.Event()

        def run() -> None:
            try:
                call()
            except BaseException as exc:  # handed to the stream thread
                outcome.append(exc)
            finally:
                done.set()

        threading.Thread(target=run, name=f"streamhouse-{step}", daemon=True).start()
        limit = time.monotonic() + timeout_s + STUCK_GRACE_S
        while not done.wait(0.05):
            self.collector.poll()
            if time.monotonic() >= limit and not done.is_set():
                age = self.txn_age_s
                self.fatal = True
                self.txn_open = False
                raise ProducerFatalError(
                    f"the transactional producer's {step} did not return within "
                    f"{timeout_s + STUCK_GRACE_S:.0f} s (its timeout {timeout_s:.1f} s), its transaction "
                    f"open for {age or 0:.1f} s: librdkafka "
                    "waits for a group coordinator that left the cluster without a deadline "
                    "(confluentinc/librdkafka#5456, #5511); the producer is abandoned"
                )
        if outcome:
            raise outcome[0]

    def _raise_txn(self, exc: KafkaException, step: str) -> None:
        if _is_fatal(exc) and not is_fenced(exc):
            age = self.txn_age_s
            self.fatal = True
            self.txn_open = False
            raise ProducerFatalError(
                f"the transactional producer failed fatally during {step}, its transaction open for "
                f"{age or 0:.1f} s: {exc.args[0]}"
            ) from exc
        if is_fenced(exc):
            age = self.txn_age_s
            self.fatal = True
            self.txn_open = False
            raise ProducerFencedError(
                f"this instance's transactional producer was fenced during {step}, its transaction open "
                f"for {age or 0:.1f} s (by another instance with the same transactional.id, or by the "
                f"coordinator aborting a transaction past transaction.timeout.ms): {exc.args[0]}",
                txn_age_s=age,
            ) from exc
        err = exc.args[0] if exc.args else None
        if err is not None and getattr(err, "txn_requires_abort", lambda: False)():
            try:
                self.abort()
            finally:
                self.txn_open = False
            raise TransactionAbortedError(f"transaction aborted during {step}: {err}") from exc
        raise exc

    # -- commit ---------------------------------------------------------------------------------------
    def commit(
        self,
        tasks: Iterable[ActiveTask],
        *,
        closing: bool = False,
        extra: Iterable[Any] = (),
    ) -> None:
        """Commit ``tasks`` in the documented order; ``extra`` objects get ``checkpoint()`` at the end."""
        tasks = list(tasks)
        started = time.perf_counter()
        self.begin()
        # 1. flush caches: forwards downstream and queues changelog + sink records on the producer
        offsets: dict[tuple[str, int], int] = {}
        for t in tasks:
            offsets.update(t.task.commit_prepare())
        if not self.exactly_once:
            # 2. commit markers (and the positions they name join the commit, even without new input)
            for t in tasks:
                for tp, off in t.send_markers(self.collector, offsets).items():
                    offsets.setdefault(tp, off)
        tps = [TopicPartition(topic, p, off) for (topic, p), off in offsets.items()]
        if self.exactly_once:
            # 2-4 atomically: records queued in the transaction + input offsets, then commit
            deadline = time.monotonic() + self.timeout_s
            if tps:
                group = self.consumer.consumer_group_metadata()
                producer = self.producer
                self._txn_call(
                    "send_offsets_to_transaction",
                    lambda t: self._bounded(
                        "send_offsets_to_transaction",
                        lambda: producer.send_offsets_to_transaction(tps, group, t),
                        t,
                    ),
                    deadline,
                )
            self._txn_call("commit_transaction", self.producer.commit_transaction, deadline)
            self.txn_open = False
            self.collector.raise_if_failed()
        else:
            # 3. every queued record acknowledged (raises if one failed: then nothing is committed)
            self.collector.flush(self.timeout_s)
            # 4. input offsets
            if tps and not closing:
                self.commit_offsets(tps)
            elif tps:
                # closing: in a rebalance callback (a commit from another thread would wait for the
                # callback to return: a deadlock) or at shutdown; the stream thread commits itself
                self.consumer.commit(offsets=tps, asynchronous=False)
        # 5. the committed writes reach the stores' disks
        for t in tasks:
            t.task.persist_stores()
            p = t.key[1]
            for topic in t.task.source_topics:
                off = offsets.get((topic, p))
                if off is not None:
                    t.committed[(topic, p)] = off
            for tp in t.source_changelogs:
                off = offsets.get(tp)
                if off is not None:
                    # a store restored from its source topic reflects it up to the committed offset
                    # (Kafka checkpoints such a store at the committed offset)
                    t.offsets[tp] = off - 1
        # 6. checkpoints (exactly-once: every EOS_CHECKPOINT_RECORDS changelog records, and on close)
        written = self.collector.changelog_offsets
        for t in tasks:
            t.update_offsets(written)
        for t in tasks:
            if not self.exactly_once or closing:
                t.write_checkpoint()
            elif t.checkpoint_while_running:
                t.write_checkpoint_if_due(EOS_CHECKPOINT_RECORDS)
        for obj in extra:
            obj.checkpoint()
        elapsed = time.perf_counter() - started
        self.commits += 1
        self.commit_seconds_total += elapsed
        self.last_commit_seconds = elapsed
