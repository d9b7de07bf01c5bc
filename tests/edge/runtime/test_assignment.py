"""The rebalance protocol's choice and the standby placement under the cooperative protocol."""

from __future__ import annotations

from confluent_kafka import TopicPartition

from edge.runtime.assignment import (
    COOPERATIVE,
    EAGER,
    JoinStateWatcher,
    RebalanceProtocol,
    choose_protocol,
    standby_order,
    with_cgrp_debug,
)
from edge.runtime.metadata import InstanceInfo
from edge.runtime.rebalance import RebalanceListener
from edge.runtime.standby import standby_wanted
from edge.runtime.warmup import predict_moves


def test_cooperative_by_default_eager_under_old_upgrade_from_or_co_partitioned_sources():
    assert choose_protocol(None, {0: ["a"], 1: ["repartition"]}).strategy == COOPERATIVE
    assert choose_protocol("3.9", {0: ["a"]}).cooperative
    old = choose_protocol("2.3", {0: ["a"]})
    assert old.strategy == EAGER and "upgrade.from=2.3" in old.reason
    joined = choose_protocol(None, {0: ["a"], 1: ["left", "right"]})
    assert joined.strategy == EAGER and "[1]" in joined.reason


def test_cooperative_standbys_are_spread():
    live = ["a", "b", "c", "d"]
    # the owner never holds its own standby; the order rotates with the partition
    assert standby_order("b", live, 0) == ["a", "c", "d"]
    assert standby_order("b", live, 1) == ["c", "d", "a"]
    assert standby_order("b", live, 5) == ["d", "a", "c"]
    assert standby_order("a", ["a"], 3) == []
    # every instance computes the same placement from the published assignment: one standby per task
    infos = [InstanceInfo(i, f"{i}:1", "RUNNING") for i in live]
    for p in range(8):
        owner = infos[p % 4]
        holders = [
            i.instance_id
            for i in infos
            if standby_wanted(i.instance_id, owner, infos, 8, p, 1, cooperative=True)
        ]
        assert len(holders) == 1 and holders[0] != owner.instance_id, (p, holders)
    # with as many replicas as other instances, every other instance keeps one
    owner = infos[0]
    two = [
        i.instance_id
        for i in infos
        if standby_wanted(i.instance_id, owner, infos[:3], 8, 1, 2, cooperative=True)
    ]
    assert two == ["b", "c"]


def test_a_joining_member_is_predicted_to_take_the_lowest_task_of_the_most_loaded_instances():
    owned = {"a": [(0, 0), (0, 2), (0, 4)], "b": [(0, 1), (0, 3), (0, 5)]}
    stateful = {(0, p) for p in range(6)}
    # what librdkafka's sticky assignor did when a third member joined (the cooperative tests)
    assert predict_moves(owned, stateful, 6, 2) == [(0, 0), (0, 1)]
    assert predict_moves(owned, stateful, 6, 1) == [(0, 0)]
    assert predict_moves(owned, {(0, 1)}, 6, 2) == [(0, 1)]  # stateless tasks need no warm-up
    lopsided = {"a": [(0, p) for p in range(5)], "b": [(0, 5)]}
    assert predict_moves(lopsided, stateful, 6, 5) == [(0, 0), (0, 1)]


class _Lines:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def log(self, level: int, msg: str, *args: object) -> None:
        self.lines.append(msg % args)


def test_the_join_state_watcher_follows_librdkafkas_join_state_and_forwards_other_lines():
    forward = _Lines()
    watcher = JoinStateWatcher(forward)
    fmt = "%s [%s] %s"
    assert not watcher.joining and not watcher.in_group_rebalance
    watcher.log(10, fmt, "CGRPJOINSTATE", "c#1", 'Group "g" changed join state steady -> init (state up)')
    assert watcher.joining
    watcher.log(10, fmt, "CGRPJOINSTATE", "c#1", 'Group "g" changed join state init -> wait-join (state up)')
    assert watcher.joining and watcher.in_group_rebalance
    watcher.log(10, fmt, "HEARTBEAT", "c#1", "Heartbeat for group g generation id 3")
    watcher.log(10, fmt, "CGRPJOINSTATE", "c#1", 'Group "g" changed join state wait-assign-call -> steady')
    assert not watcher.joining and not watcher.in_group_rebalance
    watcher.log(30, fmt, "FAIL", "c#1", "broker down")
    assert forward.lines == ["FAIL [c#1] broker down"]  # debug lines are not forwarded


def test_a_cooperative_revocation_is_inside_a_rebalance_until_the_rejoin_after_it_completes():
    """librdkafka rejoins right after a cooperative revocation, but the join state reaches the consuming
    thread only with the next ``consume()``: a member fenced in between must not read "steady"."""
    watcher = JoinStateWatcher(_Lines())
    fmt = "%s [%s] %s"

    def state(change: str) -> None:
        watcher.log(10, fmt, "CGRPJOINSTATE", "c#1", f'Group "g" changed join state {change} (state up)')

    for change in ("init -> wait-join", "wait-join -> wait-sync", "wait-sync -> wait-assign-call"):
        state(change)
    state("wait-assign-call -> steady")
    assert not watcher.in_group_rebalance
    state("steady -> init")
    state("init -> wait-join")
    state("wait-join -> wait-sync")
    state("wait-sync -> wait-unassign-call")
    watcher.revoked()  # the revocation callback, then "assigned 0 more"
    state("wait-unassign-call -> wait-incr-unassign-to-complete")
    state("wait-incr-unassign-to-complete -> wait-assign-call")
    state("wait-assign-call -> steady")
    assert watcher.in_group_rebalance  # the rejoin is still to come
    state("steady -> init")
    assert watcher.in_group_rebalance
    state("init -> wait-join")
    assert watcher.in_group_rebalance
    state("wait-join -> wait-sync")
    state("wait-sync -> wait-assign-call")
    state("wait-assign-call -> steady")
    assert not watcher.in_group_rebalance


def test_the_rebalance_listener_marks_only_cooperative_revocations_of_partitions():
    class _Tasks:
        def __init__(self, strategy: str) -> None:
            self.protocol = RebalanceProtocol(strategy, "test")
            self.revoked: list = []

        def handle_revocation(self, consumer: object, partitions: list) -> None:
            self.revoked.append(partitions)

    for strategy, partitions, expected in (
        (COOPERATIVE, [TopicPartition("t", 0)], True),
        (COOPERATIVE, [], False),
        (EAGER, [TopicPartition("t", 0)], False),
    ):
        tasks = _Tasks(strategy)
        listener = RebalanceListener(tasks, closing=lambda: False, on_error=lambda exc: None)  # type: ignore[arg-type]
        listener.join_state = JoinStateWatcher(_Lines())
        listener.on_revoke(None, partitions)  # type: ignore[arg-type]
        assert tasks.revoked == [partitions]
        assert listener.join_state.in_group_rebalance is expected, (strategy, partitions)


def test_cgrp_debug_keeps_the_users_debug_contexts():
    conf: dict = {"debug": "fetch"}
    with_cgrp_debug(conf)
    assert conf["debug"] == "fetch,cgrp"
    conf = {}
    with_cgrp_debug(conf)
    assert conf["debug"] == "cgrp"
