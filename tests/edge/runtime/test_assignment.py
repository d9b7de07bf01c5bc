"""The rebalance protocol's choice and the standby placement under the cooperative protocol."""

from __future__ import annotations

from edge.runtime.assignment import COOPERATIVE, EAGER, choose_protocol, standby_order
from edge.runtime.metadata import InstanceInfo
from edge.runtime.standby import standby_wanted


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
