"""A running bronze ingest reports its progress (records so far, records/s), so the demo's longest step is
not silent (``ingest_job`` used to print nothing for 47 s)."""

from __future__ import annotations

import orjson
import pytest
from confluent_kafka import Producer

from assets.bronze.ingest import PROGRESS_PREFIX, IngestProgress, ingest_topic

pytestmark = [pytest.mark.broker]


def test_ingest_reports_records_and_rate_while_it_runs_and_when_done(kafka_broker, make_topic, tmp_lake):
    topic = make_topic("bronze-progress", partitions=2)
    producer = Producer(kafka_broker.producer(**{"linger.ms": 5}))
    for i in range(1_000):
        producer.produce(topic, key=f"k{i % 7}".encode(), value=orjson.dumps({"i": i}))
    assert producer.flush(30) == 0

    reports: list[IngestProgress] = []
    result = ingest_topic(
        kafka_broker,
        topic,
        str(tmp_lake / "bronze"),
        batch_records=100,
        show_progress=False,
        progress=reports.append,
        progress_interval_s=0.0,  # every consumed chunk: the test need not be slow to see reports
    )
    assert result.records == 1_000
    running, last = reports[:-1], reports[-1]
    assert running, "no report while consuming"
    assert all(not r.done and 0 < r.records <= 1_000 and r.rate > 0 for r in running)
    counts = [r.records for r in running]
    assert counts == sorted(counts)  # records so far never go back
    assert last.done and last.records == 1_000 and last.rate == pytest.approx(1_000 / result.seconds)
    line = last.line()
    assert line.startswith(f"{PROGRESS_PREFIX}bronze {topic}: 1,000 records in ")
    assert "records/s, done)" in line
