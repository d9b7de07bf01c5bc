"""Cooperative rebalancing (KIP-429) and warm-ups (KIP-441) end to end: a third instance joins a running
pair while input flows; the tasks that stay must not pause, the state must be exact afterwards, and a
joining instance takes a stateful task only once its warm-up copy has caught up.

The pause of a task is the longest time an input produced after the third instance started waited for
its output, with input arriving for every task every 20 ms (see :mod:`tests.edge.runtime.join_load`).
"""

from __future__ import annotations

import ast
import re

import pytest

from edge.kafka import BrokerProfile
from tests.edge.runtime.harness import wait_assignment
from tests.edge.runtime.join_load import APPEND_TIME, JoinLoad, split_pauses

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.timeout(240)]

PARTITIONS = 6


def test_a_joining_instance_pauses_only_the_tasks_that_move(kafka_broker, make_topic, unique_name, spawn):
    src, out = make_topic("in", PARTITIONS, **APPEND_TIME), make_topic("out", PARTITIONS, **APPEND_TIME)
    app = unique_name("app")
    a = spawn(app, src, out, name="a", max_warmup_replicas=0)
    b = spawn(app, src, out, name="b", max_warmup_replicas=0)
    before = wait_assignment([a, b], PARTITIONS)
    with JoinLoad(kafka_broker, src, out, unique_name("reader"), PARTITIONS) as load:
        load.run_for(3.0)
        joined_at = load.wall()
        c = spawn(app, src, out, name="c", max_warmup_replicas=0)
        after = load.run_until(lambda: wait_assignment([a, b, c], PARTITIONS, timeout=0.5), timeout=90)
        load.run_for(3.0)
        load.stop_and_drain()
        pauses = load.pauses(since=joined_at)
        stayed, _moved = split_pauses(pauses, before, after)
        assert after[c.server], f"the third instance got no task: {after}"
        assert stayed, f"every task moved: {before} -> {after}"
        # the tasks that stay keep running (eager: every task stops for the whole rebalance, seconds)
        assert max(stayed.values()) < stay_bound(kafka_broker), (stayed, _moved, before, after)
        # exact counts: nothing lost nor counted twice through the hand-over
        assert load.reader.latest() == load.expected(), "counts differ after the join"
    for inst in (a, b):  # ... and were never closed and opened again
        kept = set(before[inst.server]) & set(after[inst.server])
        assert kept, (before, after)
        assert all(_openings(inst.log_path.read_text(), p) == 1 for p in kept), inst.log_tail(60)


def test_a_joining_instance_takes_stateful_tasks_only_once_its_warm_ups_caught_up(
    kafka_broker, make_topic, unique_name, spawn
):
    """KIP-441: the third instance warms up the tasks it will receive, joins once they are within
    ``acceptable.recovery.lag``, and then restores only the tail instead of the whole changelog."""
    src, out = make_topic("in", PARTITIONS, **APPEND_TIME), make_topic("out", PARTITIONS, **APPEND_TIME)
    app = unique_name("app")
    # one changelog record per count: a history of HISTORY records per task's changelog
    common = {"changelog_collapse": "false", "max_warmup_replicas": 2, "acceptable_recovery_lag": 200}
    a = spawn(app, src, out, name="a", **common)
    b = spawn(app, src, out, name="b", **common)
    before = wait_assignment([a, b], PARTITIONS)
    with JoinLoad(kafka_broker, src, out, unique_name("reader"), PARTITIONS) as load:
        load.preload(HISTORY, keys=500)
        load.run_until(lambda: _all_counted(load), timeout=120)
        joined_at = load.wall()
        c = spawn(app, src, out, name="c", **common)
        after = load.run_until(lambda: wait_assignment([a, b, c], PARTITIONS, timeout=0.5), timeout=120)
        load.run_for(3.0)
        load.stop_and_drain()
        stayed, moved = split_pauses(load.pauses(since=joined_at), before, after)
        assert load.reader.latest() == load.expected(), "counts differ after the join"
    log = c.log_path.read_text()
    warmed = _tasks_in(log, "warming up tasks ")
    assert warmed, log[-3000:]
    caught_up = log.find("caught up in")
    assigned = log.find("assigned ")
    # the gate: the instance joined (and was assigned anything) only after its warm-ups caught up
    assert 0 <= caught_up < assigned, log[-3000:]
    got = {p for p in after[c.server]}
    hit = got & {p for _, p in warmed}
    assert hit, f"none of the warmed-up tasks {warmed} was assigned: {after}"
    for p in hit:  # a warmed-up task restores only the tail written since it caught up
        assert _restored(log, p) < HISTORY // 4, (p, _restored(log, p), log[-3000:])
    for p in got - hit:
        assert _restored(log, p) >= HISTORY, (p, _restored(log, p))
    assert stayed and moved, (before, after)  # pauses: see the test above


HISTORY = 4000


def stay_bound(client) -> float:  # type: ignore[no-untyped-def]
    """The longest pause a task that stays may see here. Measured on an idle machine: under 0.3 s on
    Apache Kafka; on the embedded broker up to 1 s, as it holds a commit sent during a rebalance until
    the rebalance completes (its join takes ``session.timeout.ms / 2``). A CI run on a loaded shared
    machine saw 2.6 s on the embedded broker, the same for every task that stayed (the revocation's
    commit held for the whole join), so the bound leaves room for that; the figures themselves are
    measured by ``benchmarks/edge_rebalance_pause.py``. The check that fails for certain under the eager
    protocol is that the tasks that stay are never opened twice."""
    return 3.0 if client.profile is BrokerProfile.REAL else 4.0


def _all_counted(load: JoinLoad) -> None:
    latest = load.reader.latest()
    behind = [k for k, n in load.expected().items() if "-h" in k and latest.get(k) != n]
    assert not behind, f"history not counted yet: {len(behind)} keys behind"


def _openings(log: str, partition: int) -> int:
    """How often the instance opened task 0_<partition> (its assignment log lines)."""
    return sum(
        1
        for m in re.finditer(r"new tasks (\[[^\]]*\])|-> tasks (\[[^\]]*\])", log)
        if (0, partition) in ast.literal_eval(m.group(1) or m.group(2))
    )


def _tasks_in(log: str, marker: str) -> list[tuple[int, int]]:
    at = log.find(marker)
    if at < 0:
        return []
    text = log[at + len(marker) :]
    return list(ast.literal_eval(text[: text.index("]") + 1]))


def _restored(log: str, partition: int) -> int:
    """Records restored for task 0_<partition> (the sum over its restore log lines)."""
    return sum(
        int(m.group(1))
        for m in re.finditer(rf"restored counts of task 0_{partition} from \S+: (\d+) records", log)
    )
