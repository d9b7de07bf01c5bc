"""The demo pipeline's sample generator, as ``streamhouse demo --pipeline pipelines/demo`` calls it.

Plain ``streamhouse demo`` produces the same data itself (``orchestration.demo``) and also runs the
edge apps; this is the declared entry point every pipeline has (``generator:`` in pipeline.yaml).
"""

from __future__ import annotations

import uuid
from datetime import datetime

from assets import sample_data
from edge.kafka import KafkaClientConfig

#: Events per day: 20,000 over the demo's three days, as `make demo`.
EVENTS_PER_DAY = 6_667


def produce_sample(
    client: KafkaClientConfig, prefix: str = "", *, start: datetime, days: int
) -> dict[str, int]:
    """Orders, clicks, customer profiles and products over ``days`` days from ``start``, with the demo's
    late, malformed and duplicate records; returns the records sent per topic."""
    data = sample_data.generate(
        EVENTS_PER_DAY * days,
        start=start,
        days=days,
        id_prefix=f"{uuid.uuid4().hex[:6]}-",
        late_ratio=sample_data.LIVE_LATE_RATIO,
        invalid_ratio=sample_data.LIVE_INVALID_RATIO,
        duplicate_ratio=sample_data.LIVE_DUPLICATE_RATIO,
    )
    return dict(sample_data.produce(client, data, prefix=prefix))
