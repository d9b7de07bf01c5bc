"""Rebalance callbacks of the stream thread's consumer (Kafka Streams' ``StreamsRebalanceListener``):
assigned partitions get tasks (their stores restored first), revoked ones are committed and closed, lost
ones dropped without a commit -- all done by the :class:`~edge.runtime.task_manager.TaskManager`.

They run on the stream thread inside ``consume()``. :class:`RebalanceListener` keeps an exception from
escaping into librdkafka (which would leave the rebalance half done, and ``close()`` would hang) and hands
it to the processing loop, which re-raises it after ``consume()`` returns.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from confluent_kafka import Consumer, TopicPartition

from edge.runtime.assignment import JoinStateWatcher
from edge.runtime.task_manager import TaskManager

log = logging.getLogger(__name__)

Callback = Callable[[Consumer, list[TopicPartition]], None]


class RebalanceListener:
    def __init__(
        self,
        tasks: TaskManager,
        *,
        closing: Callable[[], bool],
        on_error: Callable[[BaseException], None],
    ) -> None:
        self.tasks = tasks
        #: True once the instance shuts down: only revocations are still handled
        self._closing = closing
        #: where an exception raised by a callback goes (the loop re-raises it after ``consume()``)
        self._on_error = on_error
        #: bumped by every rebalance callback: the consumer's assignment can only have changed when it
        #: moved (the processing loop re-reads ``consumer.assignment()`` -- a round trip to librdkafka's
        #: main thread -- only then, not once per batch)
        self.version = 0
        #: between a revocation and the next assignment (leaving the group then confuses some brokers)
        self.in_rebalance = False
        #: the member's join state (cooperative protocol; set by the app): a cooperative revocation is
        #: followed by a rejoin, and the member is inside a rebalance until that rejoin completes
        self.join_state: JoinStateWatcher | None = None

    def on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._run(self.tasks.handle_assignment, consumer, partitions, revoke=False)

    def on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._run(self.tasks.handle_revocation, consumer, partitions, revoke=True)

    def on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._run(self.tasks.handle_lost, consumer, partitions, revoke=False)

    def _run(
        self, callback: Callback, consumer: Consumer, partitions: list[TopicPartition], *, revoke: bool
    ) -> None:
        self.version += 1
        self.in_rebalance = revoke
        if revoke and partitions and self.join_state is not None and self.tasks.protocol.cooperative:
            self.join_state.revoked()
        if self._closing() and not revoke:
            return
        try:
            callback(consumer, partitions)
        except BaseException as exc:
            log.debug("rebalance callback failed: %s", exc)
            self._on_error(exc)
