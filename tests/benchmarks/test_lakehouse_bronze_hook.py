"""The Kafka -> bronze benchmark hook at a tiny size, on the shared broker: figures plus a verification
that really checks exactly-once (a duplicated or missing record fails it)."""

from __future__ import annotations

from types import SimpleNamespace

import pyarrow as pa
import pytest

from assets.delta import write_delta_arrow
from benchmarks.common import REQUIRED_FIELDS, prepare_input
from benchmarks.systems import lakehouse_bronze

pytestmark = [pytest.mark.broker]


def test_hook_ingests_the_shared_input_and_verifies_it(kafka_broker, unique_name, tmp_path) -> None:
    topic = unique_name("bronze-bench")
    prepare_input(kafka_broker, topic, 5_000, 50, partitions=2)
    ctx = SimpleNamespace(client=kafka_broker, input_topic=topic, events=5_000, keys=50,
                          run_id=unique_name("run"), workdir=tmp_path)  # fmt: skip
    [res] = lakehouse_bronze.bench(ctx)
    assert all(f in res for f in REQUIRED_FIELDS)
    assert res["status"] == "ok" and res["verification"]["correct"], res
    assert res["events"] == 5_000 and res["events_per_s"] > 0
    assert len(res["runs"]) == 2 and all(r["commits"] >= 1 for r in res["runs"])


def test_verification_catches_duplicates_gaps_and_losses(tmp_path) -> None:
    def table(positions: list[tuple[int, int]]) -> str:
        uri = str(tmp_path / f"t{len(list(tmp_path.iterdir()))}")
        write_delta_arrow(
            pa.table(
                {
                    "partition": pa.array([p for p, _ in positions], pa.int32()),
                    "offset": pa.array([o for _, o in positions], pa.int64()),
                }
            ),
            uri,
        )
        return uri

    assert lakehouse_bronze._verify(table([(0, 0), (0, 1), (1, 0)]), 3)["correct"]
    assert not lakehouse_bronze._verify(table([(0, 0), (0, 1), (0, 1)]), 3)["correct"]  # duplicate
    assert not lakehouse_bronze._verify(table([(0, 0), (0, 2), (1, 0)]), 3)["correct"]  # gap
    assert not lakehouse_bronze._verify(table([(0, 0), (0, 1)]), 3)["correct"]  # lost record
