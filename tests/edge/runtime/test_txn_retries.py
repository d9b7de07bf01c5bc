"""Exactly-once commits repeat a transactional call that failed with a retriable error.

librdkafka hands ``send_offsets_to_transaction`` / ``commit_transaction`` errors such as
CONCURRENT_TRANSACTIONS (the coordinator still writing the previous transaction's markers) or
COORDINATOR_LOAD_IN_PROGRESS (a bounced coordinator's successor loading the log) back to the caller as
retriable; Java's producer repeats those requests itself. Before, the edge passed them to the stream
thread, which stopped the instance on CONCURRENT_TRANSACTIONS. The calls are driven through the
committer with a producer double that fails the way librdkafka reports (the broker side is covered by
tests/system/test_broker_bounce.py on a 3-node cluster).
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import KafkaError, KafkaException

from edge.processor.collector import CollectorUnusableError
from edge.runtime.commit import Committer, ProducerFatalError, TransactionAbortedError
from edge.runtime.connectivity import ClusterWatchdog, ConnectionLogLimiter
from edge.runtime.outage import OutageWatchdog
from edge.runtime.producer import KafkaCollector


class _Producer:
    """Fails each transactional call with the queued errors, then succeeds; records the calls."""

    def __init__(self, errors: dict[str, list[KafkaError]]) -> None:
        self.errors = errors
        self.calls: list[str] = []

    def _call(self, name: str) -> None:
        self.calls.append(name)
        queued = self.errors.get(name)
        if queued:
            raise KafkaException(queued.pop(0))

    def begin_transaction(self) -> None:
        self._call("begin")

    def send_offsets_to_transaction(self, tps: object, group: object, timeout: float) -> None:
        self._call("send_offsets")

    def commit_transaction(self, timeout: float) -> None:
        self._call("commit")

    def abort_transaction(self, timeout: float) -> None:
        self._call("abort")


class _Consumer:
    def consumer_group_metadata(self) -> object:
        return object()


class _Collector:
    first_error = None

    def __init__(self) -> None:
        self.changelog_offsets: dict = {}

    def poll(self) -> None:
        pass

    def raise_if_failed(self) -> None:
        pass


class _Task:
    """An active task whose commit names one input offset and has nothing to persist."""

    key = (0, 0)
    committed: dict = {}
    source_changelogs: tuple = ()
    offsets: dict = {}

    class task:  # the attribute ActiveTask has
        source_topics = ("in",)

        @staticmethod
        def commit_prepare() -> dict:
            return {("in", 0): 42}

        @staticmethod
        def persist_stores() -> None:
            pass

    def update_offsets(self, written: object) -> None:
        pass

    def write_checkpoint(self) -> None:
        pass

    checkpoint_while_running = True

    def write_checkpoint_if_due(self, min_records: int) -> bool:
        return False


def _outage(*, exactly_once: bool) -> OutageWatchdog:
    """The stream thread's judge of which errors are task migration, with Kafka Streams' defaults."""
    return OutageWatchdog(
        ClusterWatchdog(lost_after_s=45.0, give_up_after_s=300.0),
        ConnectionLogLimiter(),
        bootstrap_servers="127.0.0.1:9092",
        exactly_once=exactly_once,
        transaction_timeout_ms=10_000,
        cluster_unavailable_timeout_ms=300_000,
        closing=lambda: False,
    )


def _committer(producer: _Producer, timeout_s: float = 10.0) -> Committer:
    return Committer(_Consumer(), producer, _Collector(), exactly_once=True, timeout_s=timeout_s)  # type: ignore[arg-type]


def test_offsets_left_failing_at_the_deadline_abort_and_resume_from_the_last_commit() -> None:
    """A hard bounce of the group coordinator's node: send_offsets_to_transaction still timed out at
    transaction.timeout.ms. librdkafka fails the transaction's records at that age anyway and the
    coordinator aborts such a transaction, so the committer aborts it itself: the tasks resume from the
    last commit with the same producer. Before, the timeout went on as task migration: every task
    closed without a commit and a new producer."""
    timeout = KafkaError(KafkaError._TIMED_OUT, "TxnOffsetCommit timed out", retriable=True)
    producer = _Producer({"send_offsets": [timeout] * 1000})
    committer = _committer(producer, timeout_s=0.3)
    with pytest.raises(TransactionAbortedError, match=r"send_offsets_to_transaction still failed after"):
        committer.commit([_Task()])  # type: ignore[list-item]
    assert producer.calls[-1] == "abort" and "commit" not in producer.calls
    assert not committer.txn_open and not committer.fatal


def test_a_commit_left_timing_out_at_the_deadline_is_not_aborted() -> None:
    """librdkafka goes on with a timed-out commit_transaction in the background and refuses an abort
    meanwhile (_CONFLICT, seen in a hard bounce of the read leader): the error goes on (migration)."""
    timeout = KafkaError(KafkaError._TIMED_OUT, "Failed to flush all outstanding messages", retriable=True)
    producer = _Producer({"commit": [timeout] * 1000})
    with pytest.raises(KafkaException, match="Failed to flush") as raised:
        _committer(producer, timeout_s=0.3).commit([_Task()])  # type: ignore[list-item]
    assert "abort" not in producer.calls
    assert _outage(exactly_once=True).tasks_migrated(raised.value)


def test_an_abort_that_fails_at_the_deadline_passes_the_offsets_error_on() -> None:
    timeout = KafkaError(KafkaError._TIMED_OUT, "TxnOffsetCommit timed out", retriable=True)
    abort_timeout = KafkaError(KafkaError._TIMED_OUT, "abort timed out", retriable=True)
    producer = _Producer({"send_offsets": [timeout] * 1000, "abort": [abort_timeout]})
    with pytest.raises(KafkaException, match="TxnOffsetCommit timed out") as raised:
        _committer(producer, timeout_s=0.3).commit([_Task()])  # type: ignore[list-item]
    assert _outage(exactly_once=True).tasks_migrated(raised.value)


def test_a_commit_waiting_for_a_lost_cluster_is_not_aborted() -> None:
    """The cluster gone for a session timeout: nothing could take an abort; the error goes on at once
    (the outage path drops the tasks and replaces the producer when the cluster is back)."""
    timeout = KafkaError(KafkaError._TIMED_OUT, "commit timed out", retriable=True)
    producer = _Producer({"commit": [timeout] * 1000})
    committer = _committer(producer, timeout_s=60.0)
    committer.cluster_lost = lambda: True
    started = time.monotonic()
    with pytest.raises(KafkaException, match="commit timed out"):
        committer.commit([_Task()])  # type: ignore[list-item]
    assert time.monotonic() - started < 5
    assert "abort" not in producer.calls


def test_concurrent_transactions_on_send_offsets_is_retried() -> None:
    # as librdkafka returned it from AddOffsetsToTxn in a hard bounce of the coordinator's node:
    # without its retriable flag (the instance stopped on it)
    err = KafkaError(KafkaError.CONCURRENT_TRANSACTIONS, "concurrent")
    producer = _Producer({"send_offsets": [err, err]})
    committer = _committer(producer)
    committer.commit([_Task()])  # type: ignore[list-item]
    assert producer.calls == ["begin", "send_offsets", "send_offsets", "send_offsets", "commit"]
    assert not committer.txn_open


def test_a_retriable_commit_error_is_retried() -> None:
    err = KafkaError(KafkaError.COORDINATOR_LOAD_IN_PROGRESS, "loading", retriable=True)
    producer = _Producer({"commit": [err]})
    _committer(producer).commit([_Task()])  # type: ignore[list-item]
    assert producer.calls[-2:] == ["commit", "commit"]


def test_retries_end_at_the_deadline() -> None:
    err = KafkaError(KafkaError._TIMED_OUT, "timed out", retriable=True)
    producer = _Producer({"send_offsets": [err] * 1000})
    committer = _committer(producer, timeout_s=0.5)
    started = time.monotonic()
    with pytest.raises(TransactionAbortedError, match="send_offsets_to_transaction still failed"):
        committer.commit([_Task()])  # type: ignore[list-item]
    assert time.monotonic() - started < 5
    assert "commit" not in producer.calls


@pytest.mark.parametrize(
    "code", [KafkaError.CONCURRENT_TRANSACTIONS, KafkaError.COORDINATOR_LOAD_IN_PROGRESS]
)
def test_a_retriable_coordinator_error_left_at_the_deadline_is_task_migration(code: int) -> None:
    """A CI run's hard bounce of the controller: AddOffsetsToTxn answered CONCURRENT_TRANSACTIONS until
    the commit's deadline, and the error that then reached the stream thread stopped the instance. It is
    task migration (tasks closed without a commit, resumed from the last one), as Kafka Streams turns its
    producer's timeout under exactly-once into TaskCorruptedException."""
    producer = _Producer(
        {
            "send_offsets": [KafkaError(code, "coordinator busy")] * 1000,
            "abort": [KafkaError(code, "coordinator busy")],  # the abort cannot get through either
        }
    )
    with pytest.raises(KafkaException) as raised:
        _committer(producer, timeout_s=0.3).commit([_Task()])  # type: ignore[list-item]
    assert _outage(exactly_once=True).tasks_migrated(raised.value)


def test_an_abortable_error_is_not_retried_but_aborts() -> None:
    err = KafkaError(KafkaError.INVALID_TXN_STATE, "abortable", txn_requires_abort=True)
    producer = _Producer({"commit": [err]})
    with pytest.raises(TransactionAbortedError):
        _committer(producer).commit([_Task()])  # type: ignore[list-item]
    assert producer.calls[-2:] == ["commit", "abort"]


def test_a_fatal_abort_is_a_fatal_producer_not_a_stop() -> None:
    """A batch timed out (abortable), then the abort's EndTxn failed with fatal INVALID_TXN_STATE, as
    in a hard bounce of the controller: the producer must be replaced, the instance must go on."""
    abortable = KafkaError(KafkaError._TIMED_OUT, "batch timed out", txn_requires_abort=True)
    fatal = KafkaError(KafkaError.INVALID_TXN_STATE, "Failed to end transaction", fatal=True)
    producer = _Producer({"commit": [abortable], "abort": [fatal]})
    committer = _committer(producer)
    with pytest.raises(ProducerFatalError, match=r"while aborting"):
        committer.commit([_Task()])  # type: ignore[list-item]
    assert committer.fatal
    committer.abort()  # a fatal producer is not asked again
    assert producer.calls.count("abort") == 1

    assert _outage(exactly_once=True).tasks_migrated(ProducerFatalError("x"))
    assert not _outage(exactly_once=False).tasks_migrated(ProducerFatalError("x"))


def test_a_send_offsets_call_that_never_returns_abandons_the_producer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """librdkafka's send_offsets_to_transaction can wait for ever for a group coordinator that left the
    cluster (confluentinc/librdkafka#5456, #5511; tests/edge/runtime/test_eos_coordinator_stop.py has
    it on a 3-node cluster): the committer gives up after the call's timeout plus a grace, with the
    fatal-producer error that resumes the tasks with a new producer, instead of blocking for good."""
    import threading

    from edge.runtime import commit

    monkeypatch.setattr(commit, "STUCK_GRACE_S", 0.3)
    release = threading.Event()

    class _Stuck(_Producer):
        def send_offsets_to_transaction(self, tps: object, group: object, timeout: float) -> None:
            self._call("send_offsets")
            release.wait(30)  # as librdkafka's RD_POLL_INFINITE wait, until the test ends

    producer = _Stuck({})
    committer = _committer(producer, timeout_s=0.5)
    started = time.monotonic()
    try:
        with pytest.raises(ProducerFatalError, match=r"send_offsets_to_transaction did not return"):
            committer.commit([_Task()])  # type: ignore[list-item]
        assert time.monotonic() - started < 3
        assert committer.fatal and not committer.txn_open
        assert producer.calls == ["begin", "send_offsets"]  # neither retried nor committed
        committer.abort()  # the stuck producer is not asked again: librdkafka would refuse it anyway
        assert "abort" not in producer.calls
    finally:
        release.set()


class _RefusingProducer:
    """librdkafka's transactional producer once its open transaction failed: ``produce()`` raises
    ``_STATE`` ("Erroneous state") for every record, or ``error`` when given."""

    def __init__(self, error: KafkaError | None = None) -> None:
        self.error = error or KafkaError(
            KafkaError._STATE, "Unable to produce message: Local: Erroneous state"
        )

    def produce(self, *args: object, **kwargs: object) -> None:
        raise KafkaException(self.error)

    def poll(self, timeout: float = 0) -> int:
        return 0


def test_a_record_refused_because_the_transaction_failed_is_task_migration() -> None:
    """A clean bounce of the write leader under exactly-once: the transaction failed (TXNERR
    OUT_OF_ORDER_SEQUENCE_NUMBER, "requires epoch bump") and the next sink record's ``produce()`` raised
    ``_STATE``. The processing exception handler took it for the record's fault and the instance
    stopped. It is the producer's state: migration (tasks closed without a commit, a new producer), as
    Kafka Streams' RecordCollectorImpl makes OutOfOrderSequenceException a TaskMigratedException."""
    collector = KafkaCollector(_RefusingProducer(), exactly_once=True)  # type: ignore[arg-type]
    for send in (
        lambda: collector.send("out", b"k", b"v", 1, None),
        lambda: collector.send_changelog("app-store-changelog", 0, b"k", b"v", 1),
        lambda: collector.send_marker("app-store-changelog", 0, b"k", b"v"),
    ):
        with pytest.raises(ProducerFatalError, match="transaction failed") as raised:
            send()
        assert isinstance(raised.value, CollectorUnusableError)
        assert _outage(exactly_once=True).tasks_migrated(raised.value)


def test_other_produce_errors_stay_the_records() -> None:
    """A record too large is the record's fault: it still goes to the processing exception handler."""
    too_large = KafkaError(KafkaError.MSG_SIZE_TOO_LARGE, "Message size too large")
    collector = KafkaCollector(_RefusingProducer(too_large), exactly_once=True)  # type: ignore[arg-type]
    with pytest.raises(KafkaException) as raised:
        collector.send("out", b"k", b"v" * 10, 1, None)
    assert not isinstance(raised.value, CollectorUnusableError)
