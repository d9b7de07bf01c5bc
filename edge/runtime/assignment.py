"""The stream consumer's rebalance protocol: cooperative (Kafka Streams' default since 2.4) or eager.

Kafka Streams assigns tasks with its own assignor; librdkafka cannot run one with user data, so the
group assigns partitions with one of librdkafka's built-in assignors and a task follows its partitions:

* ``cooperative-sticky`` (the default): a rebalance revokes only the partitions that move, so the tasks
  that stay keep running without a pause; only moved tasks are committed and closed on the old owner
  and opened (restored) on the new one.
* ``range`` (eager): every rebalance revokes every partition, so every task is committed, closed and
  reopened. Chosen by ``upgrade.from`` 2.3 or older (as in Kafka Streams, where that setting keeps the
  eager protocol during a rolling upgrade), and whenever a sub-topology reads several co-partitioned
  topics: the sticky assignor balances partitions without regard to their numbers, so partition *p* of
  two topics may go to two members -- one task on two instances -- while the range assignor gives
  partition *p* of every topic (same partition count) to the same member.

Kafka Streams' own assignor keeps co-partitioned tasks whole under the cooperative protocol; that is the
one case where this runtime still stops the world.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

COOPERATIVE = "cooperative-sticky"
EAGER = "range"

#: the longest a periodic commit is put off for a join (a group that cannot settle still commits)
MAX_COMMIT_DEFERRAL_S = 30.0
#: librdkafka's debug line for a change of the member's join state ("steady": in the group, no rebalance)
_JOIN_STATE = re.compile(r"changed join state (\S+) -> (\S+)")

#: ``upgrade.from`` values that keep Kafka Streams on the eager protocol (versions before KIP-429)
EAGER_UPGRADE_FROM = frozenset(
    {"0.10.0", "0.10.1", "0.10.2", "0.11.0", "1.0", "1.1", "2.0", "2.1", "2.2", "2.3"}
)


@dataclass(frozen=True)
class RebalanceProtocol:
    """The stream consumer's ``partition.assignment.strategy`` and why it was chosen."""

    strategy: str
    reason: str

    @property
    def cooperative(self) -> bool:
        return self.strategy == COOPERATIVE


def choose_protocol(upgrade_from: str | None, subtopology_sources: dict[int, list[str]]) -> RebalanceProtocol:
    """The protocol for an app whose sub-topologies read ``subtopology_sources`` (id -> source topics)."""
    if upgrade_from is not None and str(upgrade_from).strip() in EAGER_UPGRADE_FROM:
        return RebalanceProtocol(EAGER, f"upgrade.from={upgrade_from} selects the eager protocol")
    joined = sorted(st for st, topics in subtopology_sources.items() if len(topics) > 1)
    if joined:
        return RebalanceProtocol(
            EAGER,
            f"sub-topologies {joined} read co-partitioned topics, which only the range assignor keeps "
            "on one instance",
        )
    return RebalanceProtocol(COOPERATIVE, "Kafka Streams' default (KIP-429)")


def plan_protocol(config: Any, plan: Any) -> RebalanceProtocol:
    """:func:`choose_protocol` for a :class:`~edge.runtime.config.StreamsConfig` and a topic plan."""
    protocol = choose_protocol(
        config.upgrade_from, {st.id: list(st.source_topics) for st in plan.subtopologies.values()}
    )
    log.info("rebalance protocol: %s (%s)", protocol.strategy, protocol.reason)
    return protocol


class JoinStateWatcher:
    """The stream consumer's ``logger``: tells the stream thread at once when its member (re)joins.

    A member's offset commit sent while its JoinGroup is pending waits behind it on the coordinator
    connection -- a stall of every task until the whole group has rejoined (measured: 1-2 s), which the
    Java consumer avoids by refusing the commit (RebalanceInProgressException). librdkafka exposes its
    join state only in statistics (sampled) and in its ``cgrp`` debug log, which it hands to the logger
    on the consuming thread inside ``consume()``, in order with the rebalance callbacks: so the stream
    consumer runs with ``debug=cgrp`` and this logger keeps the join state, forwarding every line below
    debug level to ``forward`` (the instance's client log)."""

    def __init__(self, forward: Any) -> None:
        self._forward = forward
        #: True from the moment the member leaves its steady join state until it is back in it
        self.joining = False
        #: librdkafka's join state ("init" before the member ever joined)
        self.state = "init"
        #: JoinGroups the member sent (transitions into ``wait-join``)
        self.joins = 0
        #: :attr:`joins` when the member last revoked partitions under the cooperative protocol
        self._revoked_at_join: int | None = None

    def revoked(self) -> None:
        """The member gave up partitions in a cooperative rebalance: librdkafka rejoins at once, but its
        join state reads ``steady`` until the log line of that rejoin reaches the consuming thread."""
        self._revoked_at_join = self.joins

    @property
    def in_group_rebalance(self) -> bool:
        """Is the member inside a rebalance of its group (a JoinGroup sent, its outcome not applied, or
        partitions revoked and the rejoin that follows not sent yet)?

        A member leaving after a cooperative revocation but before its rejoin leaves the rebalance half
        done: the embedded broker then never completes it (the other members loop on "rebalance in
        progress")."""
        rejoin_pending = self._revoked_at_join is not None and self.joins <= self._revoked_at_join
        return rejoin_pending or self.state not in ("init", "steady")

    def log(self, level: int, msg: str, *args: Any, **kwargs: Any) -> None:
        # confluent-kafka maps librdkafka's syslog levels to Python's: its debug lines arrive as DEBUG
        text = msg % args if args else msg
        match = _JOIN_STATE.search(text)
        if match is not None:
            self.state = match.group(2)
            self.joining = self.state != "steady"
            self.joins += self.state == "wait-join"
            return
        if level > logging.DEBUG:
            self._forward.log(level, msg, *args, **kwargs)


def with_cgrp_debug(conf: dict[str, Any]) -> None:
    """Add librdkafka's ``cgrp`` debug context to a consumer config (keeping the user's contexts)."""
    contexts = [c for c in str(conf.get("debug", "")).split(",") if c.strip()]
    if "cgrp" not in contexts and "all" not in contexts:
        contexts.append("cgrp")
    conf["debug"] = ",".join(contexts)


def standby_order(owner: str, live: list[str], partition: int) -> list[str]:
    """Instances in the order they take standbys of ``partition`` owned by ``owner`` (cooperative).

    The sticky assignor's next owner cannot be predicted, so standbys are spread instead: the live
    instances other than the owner, sorted by id and rotated by the partition number. Every instance
    computes the same order from the published assignment (:mod:`edge.runtime.metadata`)."""
    others = sorted(i for i in set(live) if i != owner)
    if not others:
        return []
    k = partition % len(others)
    return others[k:] + others[:k]
