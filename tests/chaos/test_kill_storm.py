"""kill -9 storms against two instances: the stores end exactly at the truth, no output is lost.

A store must never run ahead of the committed offsets: when it did, a count without the record cache,
killed 20 times with a 30 s commit interval, ended 72.7 % over the truth (replayed input was counted
again).
These trials kill instances (standbys on and off) and then compare every key's count in the stores,
read through interactive queries, with the true count of inputs. Kills alternate between two kinds:

* *outside*: SIGKILL at a random moment while a chunk of input is processed (mostly between commits);
* *inside a commit*: the instance kills itself after its changelog records and commit markers were
  acknowledged but before the input offsets are committed (``tests.chaos.apps:counts``), a window of a
  few milliseconds no outside kill hits reliably. Under at-least-once the survivor then takes every task
  over before the victim restarts, so a standby is promoted on a changelog that ends on a marker which
  never became valid. (A promoted standby that kept such uncommitted records ended +30 over the truth
  on Apache Kafka with standbys.)
"""

from __future__ import annotations

import random
import time
from collections import Counter
from pathlib import Path

import pytest

from edge.kafka import KafkaClientConfig
from edge.kafka.probe import broker_hides_aborted_records
from tests.chaos.apps import DIE_FILE_ENV
from tests.chaos.conftest import Scale, wait_exit
from tests.edge.runtime.harness import (
    Instance,
    OutputReader,
    expected_counts,
    keyed,
    produce,
    wait_assignment,
)

pytestmark = [pytest.mark.slow, pytest.mark.broker, pytest.mark.timeout(1800)]
#: tests/edge/runtime/apps/count_app.py's RocksDB count without the record cache, able to die in a commit
ATTR = "tests.chaos.apps:counts"
PARTITIONS = 4


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
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if guarantee == "exactly_once_v2" and not broker_hides_aborted_records(kafka_broker):
        pytest.skip(
            "this broker shows aborted transactional records to read_committed consumers (the embedded "
            "broker does), so exactly-once state is not exact on it; run with STREAMHOUSE_BROKER_KIND=kafka"
        )
    rng = random.Random(16)
    src, out = make_topic("in", PARTITIONS), make_topic("out", PARTITIONS)
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
    die_files = {name: tmp_path / f"die-{name}" for name in dirs}

    def spawn(name: str) -> Instance:
        with monkeypatch.context() as env:
            env.setenv(DIE_FILE_ENV, str(die_files[name]))
            return spawn_instance(app, src, out, name=name, state_dir=dirs[name], attr=ATTR, **config)

    live: dict[str, Instance] = {name: spawn(name) for name in dirs}
    _wait_settled(list(live.values()))
    reader = OutputReader(kafka_broker, out, unique_name("reader"), committed=guarantee != "at_least_once")
    events = keyed(scale.events, scale.keys)
    truth = expected_counts(events)
    chunks = [events[i :: scale.kills + 1] for i in range(scale.kills + 1)]
    started = time.monotonic()
    kills = inside = 0
    for i, chunk in enumerate(chunks):
        last = i == len(chunks) - 1
        name = rng.choice(sorted(live))
        if not last and i % 2 == 1:
            # inside the victim's next commit that carries input offsets (the chunk gives it one)
            die_files[name].touch()
        produce(kafka_broker, src, chunk)
        if last:
            break
        if i % 2 == 0:
            # outside: while the chunk is being processed, mostly between two commits
            time.sleep(rng.uniform(0.3, 1.2))
            live[name].kill9()
        else:
            code = wait_exit(live[name], 120)
            assert code == -9, f"instance {name} exited with {code}, not by its own SIGKILL"
            inside += 1
            if guarantee == "at_least_once":
                # the survivor takes every task over (promoting its standbys) before the victim is back;
                # under exactly-once it would wait out the victim's open transaction instead
                survivor = next(inst for n, inst in live.items() if n != name)
                wait_assignment([survivor], PARTITIONS, timeout=120)
        kills += 1
        live[name] = spawn(name)
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
        kills_inside_commit=inside,
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
