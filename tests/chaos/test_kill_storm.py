"""kill -9 storms against two instances: the stores end exactly at the truth, no output is lost.

Issue 16: a count without the record cache, killed 20 times with a 30 s commit interval, ended 72.7 %
over the truth -- the store ran ahead of the committed offsets and replayed input was counted again.
These trials kill instances at random moments between commits (standbys on and off) and then compare
every key's count in the stores, read through interactive queries, with the true count of inputs.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from pathlib import Path

import pytest

from edge.kafka import KafkaClientConfig
from edge.kafka.probe import broker_hides_aborted_records
from tests.chaos.conftest import Scale
from tests.edge.runtime.harness import Instance, OutputReader, expected_counts, keyed, produce

pytestmark = [pytest.mark.slow, pytest.mark.broker, pytest.mark.timeout(1800)]
ATTR = "counts"  # tests/edge/runtime/apps/count_app.py: a RocksDB count without the record cache


def _store_counts(instances: list[Instance], keys: list[str]) -> dict[str, int]:
    """Every key's count as the stores hold it (a key hosted elsewhere is forwarded to its owner)."""
    live = [i for i in instances if i.proc.poll() is None]
    out: dict[str, int] = {}
    for n, key in enumerate(keys):
        status, body = live[n % len(live)].get(f"/v1/stores/counts/keys/{key}")
        assert status == 200, (key, status, body)
        out[key] = body["value"]
    return out


def _wait_settled(instances: list[Instance], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    for inst in instances:
        inst.wait_running(max(1.0, deadline - time.monotonic()))


@pytest.mark.parametrize("standbys", [0, 1], ids=["no-standby", "standby"])
@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once_v2"])
def test_kill9_storm_keeps_state_exact(
    kafka_broker: KafkaClientConfig,
    make_topic,
    unique_name,
    spawn_instance,
    tmp_path: Path,
    scale: Scale,
    record_figures,
    guarantee: str,
    standbys: int,
    broker_kind,
    request: pytest.FixtureRequest,
) -> None:
    if guarantee == "at_least_once" and standbys and broker_kind.value == "kafka":
        # Known defect (issue 16, open): on Apache Kafka, a promoted standby under at-least-once can
        # keep changelog records of a killed instance's uncommitted work (seen: +30 on some keys in CI,
        # 2026-11-24). It passes on Tansu; the run is kept so a fix shows as XPASS.
        request.applymarker(
            pytest.mark.xfail(reason="promoted standby may keep orphan changelog records (issue 16)")
        )
    if guarantee == "exactly_once_v2" and not broker_hides_aborted_records(kafka_broker):
        pytest.skip(
            "this broker shows aborted transactional records to read_committed consumers (the embedded "
            "broker does), so exactly-once state is not exact on it; run with STREAMHOUSE_BROKER_KIND=kafka"
        )
    rng = random.Random(16)
    src, out = make_topic("in", 4), make_topic("out", 4)
    app = unique_name("app")
    config = {
        "processing_guarantee": guarantee,
        "commit_interval_ms": scale.commit_interval_ms if guarantee == "at_least_once" else 100,
        "num_standby_replicas": standbys,
        # without collapsing, every write is logged at once: a crash then leaves changelog records of
        # uncommitted input behind (what commit markers exclude from restores and standbys)
        "changelog_collapse": "false" if standbys else "true",
    }
    dirs = {name: tmp_path / f"state-{name}" for name in ("a", "b")}
    live: dict[str, Instance] = {
        name: spawn_instance(app, src, out, name=name, state_dir=d, attr=ATTR, **config)
        for name, d in dirs.items()
    }
    _wait_settled(list(live.values()))
    reader = OutputReader(kafka_broker, out, unique_name("reader"), committed=guarantee != "at_least_once")
    events = keyed(scale.events, scale.keys)
    truth = expected_counts(events)
    chunks = [events[i :: scale.kills + 1] for i in range(scale.kills + 1)]
    started = time.monotonic()
    kills = 0
    for i, chunk in enumerate(chunks):
        produce(kafka_broker, src, chunk)
        if i == len(chunks) - 1:
            break
        # kill while the chunk is being processed, between two commits
        time.sleep(rng.uniform(0.3, 1.2))
        name = rng.choice(sorted(live))
        live[name].kill9()
        kills += 1
        live[name] = spawn_instance(app, src, out, name=name, state_dir=dirs[name], attr=ATTR, **config)
        live[name].wait_running(120)
    _wait_settled(list(live.values()))
    # every key reached its true count on the output (an overcount shows up below, as a difference)
    reader.wait_for(
        lambda r: all(r.latest().get(k, 0) >= n for k, n in truth.items()),
        timeout=300,
        what="every key's final count",
    )
    reader.poll(2.0)
    elapsed = time.monotonic() - started
    stores = _store_counts(list(live.values()), sorted(truth))
    over = {k: stores[k] - n for k, n in truth.items() if stores[k] != n}
    per_key: dict[str, list[int]] = {}
    for key, value, _, _ in reader.records:
        per_key.setdefault(key, []).append(value)
    missing = sum(len(set(range(1, n + 1)) - set(per_key.get(k, []))) for k, n in truth.items())
    repeated = sum(c - 1 for vs in per_key.values() for c in Counter(vs).values() if c > 1)
    record_figures(
        guarantee=guarantee,
        standbys=standbys,
        events=scale.events,
        kills=kills,
        commit_interval_ms=config["commit_interval_ms"],
        changelog_collapse=config["changelog_collapse"],
        seconds=round(elapsed, 1),
        state_over_truth=max(over.values(), default=0),
        outputs_missing=missing,
        outputs_repeated=repeated,
    )
    reader.close()
    assert not over, f"store counts differ from the truth (store - truth): {dict(list(over.items())[:10])}"
    assert missing == 0, f"{missing} count values never reached the output topic"
    if guarantee == "exactly_once_v2":
        assert repeated == 0, f"{repeated} outputs repeated under exactly-once"
