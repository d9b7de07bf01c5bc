"""Taking records from a consumer the way Kafka's ``poll`` hands them over: what is there, at once.

``Consumer.consume(n, timeout)`` returns only once ``n`` messages arrived or ``timeout`` passed, so at a
low rate every batch waited the whole timeout with records already fetched (measured: the full
``poll.ms`` with 979 records in the queue), and a restore's last batch waited its whole timeout at the
end of every pass. Kafka's ``poll(timeout)`` returns as soon as it has any records. :func:`fetch_ready`
does the same with librdkafka: take what is queued without waiting; only when nothing is, block for
the first message, then take what came with it.
"""

from __future__ import annotations

from typing import Any


def fetch_ready(consumer: Any, max_records: int, timeout_s: float) -> list[Any]:
    """Up to ``max_records`` messages: every one already queued, else the first to arrive within
    ``timeout_s`` plus those queued with it; ``[]`` when none came. Under load the first call returns a
    full batch, so this costs nothing per message; rebalance and error callbacks are served as by
    ``consume``."""
    msgs: list[Any] = consumer.consume(max_records, 0)
    if msgs:
        return msgs
    first = consumer.poll(timeout_s)
    if first is None:
        return msgs
    if max_records == 1:
        return [first]
    rest: list[Any] = consumer.consume(max_records - 1, 0)
    rest.insert(0, first)
    return rest
