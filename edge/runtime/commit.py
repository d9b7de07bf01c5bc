"""The commit protocol -- the one place that knows the order in which a commit happens.

At-least-once::

    1. flush every task's stores      (caches -> downstream processors/sinks + changelog records)
    2. send changelog and sink records (already queued on the producer by step 1 and by processing)
    3. flush the producer              (wait for every ack; a failed send aborts the commit)
    4. commit input offsets            (synchronously, to the consumer group)
    5. write local checkpoint files    (changelog offsets the stores now reflect)

Exactly-once v2: steps 2-4 are one Kafka transaction -- outputs, changelog records and the input offsets
(``send_offsets_to_transaction``) become visible atomically at ``commit_transaction``. Checkpoints are
written only on a clean close (a crash must rebuild state from the committed changelog).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from typing import Any

from confluent_kafka import KafkaException, TopicPartition

from edge.errors import StreamhouseError
from edge.runtime.producer import KafkaCollector, is_fenced
from edge.runtime.tasks import ActiveTask

log = logging.getLogger(__name__)


class ProducerFencedError(StreamhouseError):
    """Another instance with our transactional.id started: this one is a zombie and must stop."""


class TransactionAbortedError(StreamhouseError):
    """The open transaction was aborted; stores of active tasks must be rebuilt from their changelogs."""


class Committer:
    def __init__(
        self,
        consumer: Any,
        producer: Any,
        collector: KafkaCollector,
        *,
        exactly_once: bool,
        timeout_s: float = 60.0,
    ) -> None:
        self.consumer = consumer
        self.producer = producer
        self.collector = collector
        self.exactly_once = exactly_once
        self.timeout_s = timeout_s
        self.txn_open = False
        #: set once the producer hit a fatal error (fenced): it can do nothing more, not even abort
        self.fatal = False
        self.commits = 0
        self.commit_seconds_total = 0.0
        self.last_commit_seconds = 0.0

    # -- transactions -------------------------------------------------------------------------------
    def begin(self) -> None:
        if self.exactly_once and not self.txn_open:
            try:
                self.producer.begin_transaction()
            except KafkaException as exc:
                self._raise_txn(exc, "begin")
            self.txn_open = True

    def abort(self) -> None:
        if not (self.exactly_once and self.txn_open) or self.fatal:
            self.txn_open = False
            return
        self.txn_open = False
        try:
            self.producer.abort_transaction(self.timeout_s)
        except KafkaException as exc:
            if is_fenced(exc):
                self.fatal = True
                raise ProducerFencedError(f"producer fenced while aborting: {exc}") from exc
            raise
        finally:
            self.collector.first_error = None
            self.collector.changelog_offsets.clear()

    def _raise_txn(self, exc: KafkaException, step: str) -> None:
        if is_fenced(exc) or (exc.args and getattr(exc.args[0], "fatal", lambda: False)()):
            self.fatal = True
            self.txn_open = False
            raise ProducerFencedError(
                f"this instance's transactional producer was fenced during {step} (another instance "
                f"started with the same transactional.id): {exc.args[0]}"
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
        tps = [TopicPartition(topic, p, off) for (topic, p), off in offsets.items()]
        if self.exactly_once:
            # 2-4 atomically: records queued in the transaction + input offsets, then commit
            try:
                if tps:
                    self.producer.send_offsets_to_transaction(
                        tps, self.consumer.consumer_group_metadata(), self.timeout_s
                    )
                self.producer.commit_transaction(self.timeout_s)
            except KafkaException as exc:
                self._raise_txn(exc, "commit")
            self.txn_open = False
            self.collector.raise_if_failed()
        else:
            # 2+3. every queued record acknowledged (raises if one failed: then nothing is committed)
            self.collector.flush(self.timeout_s)
            # 4. input offsets
            if tps:
                self.consumer.commit(offsets=tps, asynchronous=False)
        # 5. checkpoints (exactly-once: only on clean close)
        written = self.collector.changelog_offsets
        for t in tasks:
            t.update_offsets(written)
        if not self.exactly_once or closing:
            for t in tasks:
                t.write_checkpoint()
        for obj in extra:
            obj.checkpoint()
        elapsed = time.perf_counter() - started
        self.commits += 1
        self.commit_seconds_total += elapsed
        self.last_commit_seconds = elapsed
