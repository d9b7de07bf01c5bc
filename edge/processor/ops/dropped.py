"""Records an operator skips (a null key or value where one is needed): logged as Kafka logs them and
counted in the task's dropped-records metric (``StreamTask.dropped_records``, exported on ``/metrics`` as
``streamhouse_edge_dropped_records_total``), never dropped silently."""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger("edge.processor.dropped")


def skip_record(context: Any, reason: str) -> None:
    """Log ``Skipping record due to <reason>.`` with the record's position and count it."""
    task = getattr(context, "_task", None)
    if task is not None and hasattr(task, "dropped_records"):
        task.dropped_records += 1
    topic = getattr(context, "topic", None)
    if topic is None:
        log.warning("Skipping record due to %s. Topic, partition, and offset not known.", reason)
    else:
        log.warning(
            "Skipping record due to %s. topic=[%s] partition=[%s] offset=[%s]",
            reason,
            topic,
            getattr(context, "partition", None),
            getattr(context, "offset", None),
        )
