"""Records an operator skips (a null key or value where one is needed): logged as Kafka logs them and
counted in the task's dropped-records metric (``StreamTask.dropped_records``, exported on ``/metrics`` as
``streamhouse_edge_dropped_records_total``), never dropped silently. The log goes through
:mod:`edge.processor.record_warnings`: the first record of a reason as Kafka logs it, then one summary
line per interval, so a flood of skipped records cannot drown the log (the metric counts every one)."""

from __future__ import annotations

import logging
from typing import Any

from edge.processor.record_warnings import warn_record

log = logging.getLogger("edge.processor.dropped")


def skip_record(context: Any, reason: str, cause: str | None = None, logger: logging.Logger = log) -> None:
    """Log ``Skipping record due to <reason>.`` with the record's position and count it.

    ``cause`` groups the records of one summary line (default: the reason); pass it when the reason
    varies per record (it names an exception, say)."""
    task = getattr(context, "_task", None)
    if task is not None and hasattr(task, "dropped_records"):
        task.dropped_records += 1
    summary = f"Skipping record due to {cause or reason}"
    topic = getattr(context, "topic", None)
    if topic is None:
        warn_record(
            logger, summary, "Skipping record due to %s. Topic, partition, and offset not known.", reason
        )
    else:
        warn_record(
            logger,
            summary,
            "Skipping record due to %s. topic=[%s] partition=[%s] offset=[%s]",
            reason,
            topic,
            getattr(context, "partition", None),
            getattr(context, "offset", None),
        )
