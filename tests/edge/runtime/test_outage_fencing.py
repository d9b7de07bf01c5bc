"""Exactly-once after an outage longer than ``transaction.timeout.ms``: the old producer's fencing is
task migration, not a zombie.

On the broker's return, the transaction coordinator aborts the transaction left open by the outage and
bumps the producer epoch. The producer of before the outage still holds records of that transaction,
so its next request is fenced, and ``poll`` raises it as a fatal error. The broker-restart trial
(tests/chaos/test_broker_restart.py) saw that error end the instance: the stream thread took it for
a second instance with the same transactional.id. Kafka Streams treats a fenced producer as
TaskMigratedException: close the tasks dirty, replace the producer, rejoin. Here the classification is
checked on its own; the trial on Apache Kafka checks the whole path.
"""

from __future__ import annotations

from confluent_kafka import KafkaError, KafkaException

from edge.runtime.commit import ProducerFencedError
from edge.runtime.connectivity import ClusterWatchdog, ConnectionLogLimiter
from edge.runtime.outage import OutageWatchdog


def _outage(guarantee: str) -> OutageWatchdog:
    """The stream thread's outage handling, as an instance with the default settings has it."""
    return OutageWatchdog(
        ClusterWatchdog(lost_after_s=45.0, give_up_after_s=300.0),
        ConnectionLogLimiter(),
        bootstrap_servers="127.0.0.1:9092",
        exactly_once=guarantee == "exactly_once_v2",
        transaction_timeout_ms=10_000,
        cluster_unavailable_timeout_ms=300_000,
        closing=lambda: False,
    )


def _fatal_fenced() -> KafkaException:
    return KafkaException(
        KafkaError(
            KafkaError._FENCED,
            "Failed to add partitions to transaction: This instance has been fenced by a newer instance",
            fatal=True,
        )
    )


def _zombie() -> ProducerFencedError:
    try:
        try:
            raise _fatal_fenced()
        except KafkaException as exc:
            raise ProducerFencedError("fenced during commit") from exc
    except ProducerFencedError as err:
        return err


def test_the_old_producer_fenced_after_an_outage_is_task_migration() -> None:
    outage = _outage("exactly_once_v2")
    outage.resume_pending = True  # the outage dropped the tasks; they resume when the cluster answers
    assert outage.fenced_by_outage(_fatal_fenced())
    assert outage.fenced_by_outage(_zombie())
    # the stream thread's classification: drop the tasks and go on, as for any lost task
    assert outage.tasks_migrated(_fatal_fenced())
    assert outage.tasks_migrated(_zombie())


def test_fencing_outside_an_outage_still_stops_the_zombie() -> None:
    outage = _outage("exactly_once_v2")
    assert not outage.fenced_by_outage(_fatal_fenced())
    assert not outage.fenced_by_outage(_zombie())
    assert not outage.tasks_migrated(_zombie())  # re-raised: the instance stops (exit 3)


def test_other_errors_during_an_outage_are_not_taken_for_fencing() -> None:
    outage = _outage("exactly_once_v2")
    outage.resume_pending = True
    assert not outage.fenced_by_outage(KafkaException(KafkaError(KafkaError._TIMED_OUT, "timed out")))
    assert not outage.fenced_by_outage(ValueError("a bug in a processor"))


def test_at_least_once_has_no_transactional_producer_to_fence() -> None:
    outage = _outage("at_least_once")
    outage.resume_pending = True
    assert not outage.fenced_by_outage(_fatal_fenced())


def test_the_fencing_is_logged_once_per_outage(caplog) -> None:  # type: ignore[no-untyped-def]
    outage = _outage("exactly_once_v2")
    outage.resume_pending = True
    with caplog.at_level("WARNING", logger="edge.runtime.outage"):
        for _ in range(3):
            assert outage.fenced_by_outage(_fatal_fenced())
    lines = [r.getMessage() for r in caplog.records if "was fenced" in r.getMessage()]
    assert len(lines) == 1, lines
    assert "transaction.timeout.ms=10000" in lines[0]


def _fenced_at(age_s: float | None) -> ProducerFencedError:
    try:
        try:
            raise _fatal_fenced()
        except KafkaException as exc:
            raise ProducerFencedError("fenced during commit", txn_age_s=age_s) from exc
    except ProducerFencedError as err:
        return err


def test_a_transaction_past_its_timeout_fenced_without_an_outage_is_task_migration() -> None:
    """A broker bounce: no outage, but the transaction outlived transaction.timeout.ms (10 s) and the
    coordinator aborted it; Kafka Streams calls that TaskMigratedException, and so does the edge."""
    outage = _outage("exactly_once_v2")
    assert outage.tasks_migrated(_fenced_at(10.5))
    assert not outage.tasks_migrated(_fenced_at(3.0))  # younger: only a newer incarnation fences it
    assert not outage.tasks_migrated(_fenced_at(None))  # no transaction open: a zombie's fencing
    assert not _outage("at_least_once").fenced_by_timeout(_fenced_at(60.0))


def test_the_committer_says_how_old_the_fenced_transaction_was() -> None:
    """Committer.abort on a fenced producer: the error carries the open transaction's age."""
    import time

    from edge.runtime.commit import Committer

    class FencedProducer:
        def begin_transaction(self) -> None:
            pass

        def abort_transaction(self, timeout: float) -> None:
            raise _fatal_fenced()

    class Collector:
        first_error = None
        changelog_offsets: dict = {}

    committer = Committer(None, FencedProducer(), Collector(), exactly_once=True)  # type: ignore[arg-type]
    committer.begin()
    committer.txn_began = time.monotonic() - 12.0
    try:
        committer.abort()
    except ProducerFencedError as exc:
        assert exc.txn_age_s is not None and 11.5 < exc.txn_age_s < 20
        assert "open for 12." in str(exc)
    else:
        raise AssertionError("a fenced abort must raise ProducerFencedError")
    assert committer.fatal and committer.txn_age_s is None
