"""The at-least-once offset commit gives up instead of blocking the stream thread for a whole outage.

librdkafka's synchronous commit can wait for a coordinator for as long as none answers. A thread dump
of the broker-restart trial (tests/chaos/test_broker_restart.py) showed the stream thread in
``consumer.commit`` two minutes after the broker stopped, and the instance still RUNNING.
``Committer.commit_offsets`` waits for the commit while serving the producer, and gives up once the
cluster is lost or after ``timeout_s``. The consumer here is a stand-in whose commit blocks until
released; the broker trials stop a real broker under a committing app.
"""

from __future__ import annotations

import threading
import time

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from edge.runtime.commit import Committer

TPS = [TopicPartition("orders", 0, 42), TopicPartition("orders", 1, 7)]


class BlockingConsumer:
    """``commit`` blocks until ``release`` is set, then returns or raises ``fail_with``."""

    def __init__(self, fail_with: BaseException | None = None) -> None:
        self.release = threading.Event()
        self.fail_with = fail_with
        self.committed: list[list[tuple[str, int, int]]] = []
        self.thread_names: list[str] = []

    def commit(self, offsets: list[TopicPartition], asynchronous: bool) -> None:
        assert asynchronous is False
        self.thread_names.append(threading.current_thread().name)
        self.release.wait(30)
        if self.fail_with is not None:
            raise self.fail_with
        self.committed.append([(tp.topic, tp.partition, tp.offset) for tp in offsets])


class CountingCollector:
    def __init__(self) -> None:
        self.polls = 0

    def poll(self) -> None:
        self.polls += 1


def committer(consumer: BlockingConsumer, timeout_s: float = 30.0) -> tuple[Committer, CountingCollector]:
    collector = CountingCollector()
    c = Committer(consumer, object(), collector, exactly_once=False, timeout_s=timeout_s)  # type: ignore[arg-type]
    return c, collector


def test_a_commit_that_answers_commits_its_offsets() -> None:
    consumer = BlockingConsumer()
    consumer.release.set()
    c, _ = committer(consumer)
    c.commit_offsets(TPS)
    assert consumer.committed == [[("orders", 0, 42), ("orders", 1, 7)]]
    assert consumer.thread_names == ["streamhouse-offset-commit"]


def test_the_commits_own_error_reaches_the_stream_thread() -> None:
    err = KafkaException(KafkaError(KafkaError.ILLEGAL_GENERATION))
    consumer = BlockingConsumer(fail_with=err)
    consumer.release.set()
    c, _ = committer(consumer)
    with pytest.raises(KafkaException) as raised:
        c.commit_offsets(TPS)
    assert raised.value is err


def test_a_slow_commit_is_waited_for_while_the_producer_is_served() -> None:
    consumer = BlockingConsumer()
    c, collector = committer(consumer)
    threading.Timer(0.4, consumer.release.set).start()
    c.commit_offsets(TPS)
    assert consumer.committed, "the commit completed and nothing was abandoned"
    # the producer's statistics and errors (the watchdog's other source) are served while waiting
    assert collector.polls >= 3


def test_a_commit_is_abandoned_once_the_cluster_is_lost() -> None:
    consumer = BlockingConsumer()
    c, _ = committer(consumer, timeout_s=30.0)
    lost_at = time.monotonic() + 0.3
    c.cluster_lost = lambda: time.monotonic() >= lost_at
    started = time.monotonic()
    with pytest.raises(KafkaException) as raised:
        c.commit_offsets(TPS)
    waited = time.monotonic() - started
    err = raised.value.args[0]
    assert err.code() == KafkaError._TIMED_OUT  # the runtime treats it as lost tasks (MIGRATED_CODES)
    assert "the cluster is unreachable" in err.str() and "orders-0@42" in err.str()
    assert 0.3 <= waited < 5, waited
    consumer.release.set()


def test_a_commit_is_abandoned_after_the_timeout_with_the_cluster_up() -> None:
    consumer = BlockingConsumer()
    c, _ = committer(consumer, timeout_s=0.5)
    started = time.monotonic()
    with pytest.raises(KafkaException) as raised:
        c.commit_offsets(TPS)
    assert 0.5 <= time.monotonic() - started < 5
    assert "no answer within 0.5 s" in raised.value.args[0].str()
    consumer.release.set()


def test_an_abandoned_commit_holds_the_consumer_until_it_ends(caplog: pytest.LogCaptureFixture) -> None:
    """confluent-kafka serializes calls on one client: the runtime must not touch the consumer while the
    abandoned commit waits (a consume would wait behind it for the whole outage)."""
    consumer = BlockingConsumer()
    c, collector = committer(consumer, timeout_s=0.2)
    with pytest.raises(KafkaException):
        c.commit_offsets(TPS)
    assert c.consumer_held
    # a second commit is refused at once instead of queueing behind the first
    with pytest.raises(KafkaException) as raised:
        c.commit_offsets(TPS)
    assert "an earlier offset commit still waits" in raised.value.args[0].str()
    polls = collector.polls
    started = time.monotonic()
    c.wait_for_abandoned(0.3)
    assert 0.3 <= time.monotonic() - started < 2
    assert collector.polls > polls, "the producer is served while waiting"
    assert c.consumer_held
    threading.Timer(0.2, consumer.release.set).start()
    with caplog.at_level("INFO", logger="edge.runtime.commit"):
        c.wait_for_abandoned(10)
        assert not c.consumer_held
    assert consumer.committed == [[("orders", 0, 42), ("orders", 1, 7)]]
    assert "went through once the cluster answered" in caplog.text
    c.commit_offsets(TPS)  # the consumer is free again
    assert len(consumer.committed) == 2


def test_an_abandoned_commit_that_fails_later_is_reported(caplog: pytest.LogCaptureFixture) -> None:
    err = KafkaException(KafkaError(KafkaError.UNKNOWN_MEMBER_ID))
    consumer = BlockingConsumer(fail_with=err)
    c, _ = committer(consumer, timeout_s=0.1)
    with pytest.raises(KafkaException):
        c.commit_offsets(TPS)
    consumer.release.set()
    c.wait_for_abandoned(10)
    with caplog.at_level("INFO", logger="edge.runtime.commit"):
        assert not c.consumer_held
    assert "abandoned during the outage ended with" in caplog.text and "UNKNOWN_MEMBER_ID" in caplog.text


class FlakyCoordinatorConsumer(BlockingConsumer):
    """``commit`` answers ``errors`` one by one (a coordinator loading the group, then moving), then
    commits."""

    def __init__(self, *errors: int) -> None:
        super().__init__()
        self.release.set()
        self.errors = list(errors)
        self.attempts = 0

    def commit(self, offsets: list[TopicPartition], asynchronous: bool) -> None:
        self.attempts += 1
        if self.errors:
            raise KafkaException(KafkaError(self.errors.pop(0)))
        super().commit(offsets, asynchronous)


def test_a_coordinator_loading_or_moving_is_waited_out_not_taken_for_task_migration() -> None:
    """librdkafka's synchronous commit returns COORDINATOR_LOAD_IN_PROGRESS where Java's ``commitSync``
    retries (a clean bounce of the coordinator's node: every task was closed without a commit, and an
    at-least-once app emitted a final result twice); now the same offsets are committed again."""
    consumer = FlakyCoordinatorConsumer(KafkaError.COORDINATOR_LOAD_IN_PROGRESS, KafkaError.NOT_COORDINATOR)
    c, _ = committer(consumer)
    c.commit_offsets(TPS)
    assert consumer.attempts == 3 and c.commit_retries == 2
    assert consumer.committed == [[("orders", 0, 42), ("orders", 1, 7)]]


def test_a_retriable_commit_error_still_there_at_the_deadline_reaches_the_stream_thread() -> None:
    consumer = FlakyCoordinatorConsumer(*[KafkaError.COORDINATOR_LOAD_IN_PROGRESS] * 100)
    c, _ = committer(consumer, timeout_s=0.5)
    started = time.monotonic()
    with pytest.raises(KafkaException) as raised:
        c.commit_offsets(TPS)
    assert raised.value.args[0].code() == KafkaError.COORDINATOR_LOAD_IN_PROGRESS
    assert time.monotonic() - started < 2.0 and 2 <= consumer.attempts < 10
    assert not consumer.committed


def test_a_member_the_group_dropped_is_not_retried() -> None:
    consumer = FlakyCoordinatorConsumer(KafkaError.UNKNOWN_MEMBER_ID)
    c, _ = committer(consumer)
    with pytest.raises(KafkaException):
        c.commit_offsets(TPS)
    assert consumer.attempts == 1 and c.commit_retries == 0
