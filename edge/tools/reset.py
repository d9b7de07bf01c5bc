"""Reset an edge application for reprocessing, as Kafka's ``kafka-streams-application-reset`` does.

A reset makes the next run of an application behave like its first run over the chosen input: the
consumer group's committed offsets of every input topic go back to a target (earliest, explicit offsets,
or the first record at or after a timestamp), its internal topics (changelogs, repartition topics, the
``<app>-instances`` metadata topic) are deleted so no old state is restored from them, and the local
state directory (``state.dir/<application.id>``: RocksDB stores, checkpoints, the instance id) is
deleted, which Kafka leaves to ``KafkaStreams#cleanUp()``.

Like Kafka's tool it refuses while the group has active members: resetting under a running instance
would be overwritten by its next commit. Unlike Kafka's tool it never asks the broker for offsets by
time or for watermarks: the embedded broker answers both wrongly (``offsets_for_times`` returns 0, the
high watermark lags), so every offset in a plan comes from reading the partition itself up to the first
record that satisfies the target, or to partition EOF. User topics are never deleted: with a topology
the internal topics are exactly the ones the runtime creates for it, plus any other existing
``<app>-...-changelog`` / ``-repartition`` topic (left behind by an older version of the topology, and
which a later version could restore stale state from), as Kafka's tool matches them.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient

from edge.errors import StreamhouseError
from edge.kafka import KafkaClientConfig
from edge.paths import check_application_id, remove_tree_inside, resolve_inside
from edge.runtime.statedir import StateDirLockedError, lock_state_dir, unlock_state_dir
from edge.runtime.topics import metadata_topic_name, partition_counts

TopicPartitionKey = tuple[str, int]


class ResetError(StreamhouseError):
    """A reset that cannot be planned or applied (unknown topic, unreachable broker, timeout)."""


class ActiveMembersError(ResetError):
    """The application's consumer group has active members (or a local instance holds its state dir)."""


#: Group states in which members are joined: the group is in use by running instances.
_ACTIVE_STATES = {
    ConsumerGroupState.STABLE,
    ConsumerGroupState.PREPARING_REBALANCING,
    ConsumerGroupState.COMPLETING_REBALANCING,
}


@dataclass(frozen=True)
class ResetTarget:
    """Where input offsets go: ``earliest``, explicit ``offsets`` or the first record at ``timestamp_ms``.

    With explicit offsets, input partitions not listed keep their committed offset (earliest when the
    group never committed one), as a partial ``--from-file`` does in Kafka's tool.
    """

    kind: str
    offsets: Mapping[TopicPartitionKey, int] = field(default_factory=dict)
    timestamp_ms: int | None = None

    @classmethod
    def earliest(cls) -> ResetTarget:
        return cls("earliest")

    @classmethod
    def at_offsets(cls, offsets: Mapping[TopicPartitionKey, int]) -> ResetTarget:
        bad = {tp: o for tp, o in offsets.items() if o < 0}
        if bad:
            raise ResetError(f"offsets must be >= 0, got {bad}")
        if not offsets:
            raise ResetError("give at least one offset to reset to")
        return cls("offsets", offsets=dict(offsets))

    @classmethod
    def at_timestamp(cls, when: datetime | int) -> ResetTarget:
        """``when``: epoch milliseconds, or a datetime (naive means UTC)."""
        if isinstance(when, datetime):
            aware = when if when.tzinfo is not None else when.replace(tzinfo=UTC)
            when = int(aware.timestamp() * 1000)
        if when < 0:
            raise ResetError(f"timestamp must be >= 0 ms, got {when}")
        return cls("timestamp", timestamp_ms=int(when))

    def describe(self) -> str:
        if self.kind == "timestamp":
            assert self.timestamp_ms is not None
            iso = datetime.fromtimestamp(self.timestamp_ms / 1000, UTC).isoformat(timespec="milliseconds")
            return f"first record at or after {iso} ({self.timestamp_ms} ms)"
        if self.kind == "offsets":
            return "explicit offsets"
        return "earliest"


@dataclass(frozen=True)
class PartitionScan:
    """What reading one partition from its beginning found."""

    #: offset of the first record present (None: the partition is empty)
    first: int | None
    #: offset of the first record the predicate accepted (None: none before the end)
    match: int | None
    #: end offset (the next offset to be written), when the scan reached it
    end: int | None

    @property
    def position(self) -> int:
        """Where a consumer should start: the match, else the end (no record satisfies the target)."""
        if self.match is not None:
            return self.match
        assert self.end is not None, "a scan without a match always reaches the end"
        return self.end


#: ``predicate(offset, timestamp_ms)``: the first record for which it is true is the scan's match;
#: None scans to the end of the partition.
Predicate = Callable[[int, int], bool] | None


def scan_partitions(
    client: KafkaClientConfig,
    predicates: Mapping[TopicPartitionKey, Predicate],
    *,
    timeout_s: float = 60.0,
) -> dict[TopicPartitionKey, PartitionScan]:
    """Read each partition from its first record until its predicate accepts one or its EOF.

    This is how offsets are found by time: Kafka's ``offsetsForTimes`` answers the same question
    (the first offset whose record's timestamp is >= t, in offset order), but the embedded broker's
    answer is wrong. A partition stops being read (paused) as soon as it has its answer, so an
    ``earliest`` scan reads one record per partition.
    """
    if not predicates:
        return {}
    conf = client.consumer(
        f"streamhouse-reset-scan-{uuid.uuid4().hex[:8]}",
        **{
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "auto.offset.reset": "earliest",
        },
    )
    consumer = Consumer(conf)
    first: dict[TopicPartitionKey, int] = {}
    found: dict[TopicPartitionKey, PartitionScan] = {}
    try:
        consumer.assign([TopicPartition(t, p, OFFSET_BEGINNING) for t, p in predicates])
        deadline = time.monotonic() + timeout_s
        while len(found) < len(predicates):
            if time.monotonic() > deadline:
                pending = sorted(set(predicates) - set(found))
                raise ResetError(
                    f"scanning {pending} for the reset offsets did not finish in {timeout_s:.0f}s "
                    f"(is the broker at {client.bootstrap_servers} reachable?)"
                )
            for msg in consumer.consume(500, 0.5):
                tp = (msg.topic(), msg.partition())
                if tp in found or tp not in predicates:
                    continue
                err = msg.error()
                if err is not None:
                    if err.code() != KafkaError._PARTITION_EOF:
                        raise ResetError(f"cannot read {tp[0]}[{tp[1]}] to find its reset offset: {err}")
                    found[tp] = PartitionScan(first.get(tp), None, msg.offset())
                else:
                    offset = msg.offset()
                    first.setdefault(tp, offset)
                    predicate = predicates[tp]
                    if predicate is None or not predicate(offset, msg.timestamp()[1]):
                        continue
                    found[tp] = PartitionScan(first[tp], offset, None)
                consumer.pause([TopicPartition(*tp)])
    finally:
        consumer.close()
    return found


@dataclass(frozen=True)
class PartitionReset:
    """One input partition: its committed offset now and the offset the reset commits."""

    topic: str
    partition: int
    current: int | None
    new: int
    #: why ``new``: "earliest", "first record at/after the time", "end (...)", "kept", "clamped ..."
    reason: str
    #: "input" (rewound) or "intermediate" (skipped to its end, Kafka's --intermediate-topics)
    role: str = "input"


@dataclass
class ResetPlan:
    """Everything a reset will do; printed by ``--dry-run``, carried out by :func:`apply_reset`."""

    application_id: str
    target: ResetTarget
    partitions: list[PartitionReset]
    #: existing internal topics that will be deleted
    internal_topics: list[str]
    #: ``state.dir/<application.id>`` (deleted when it exists)
    state_dir: Path | None
    state_dir_exists: bool
    #: the consumer group's state when planned ("EMPTY", "DEAD" when it does not exist, ...)
    group_state: str

    @property
    def offsets(self) -> dict[TopicPartitionKey, int]:
        return {(p.topic, p.partition): p.new for p in self.partitions}

    def summary(self) -> str:
        """A plain-text account of the plan (the CLI prints a table; logs and notebooks this)."""
        lines = [
            f"reset of application {self.application_id!r} (group state {self.group_state}) "
            f"to {self.target.describe()}:"
        ]
        for p in self.partitions:
            current = "-" if p.current is None else str(p.current)
            lines.append(f"  offset {p.topic}[{p.partition}]: {current} -> {p.new} ({p.role}: {p.reason})")
        for topic in self.internal_topics:
            lines.append(f"  delete internal topic {topic}")
        if self.state_dir is not None:
            what = "delete" if self.state_dir_exists else "no local state at"
            lines.append(f"  {what} {self.state_dir}")
        return "\n".join(lines)


@dataclass
class ResetResult:
    plan: ResetPlan
    deleted_topics: list[str]
    committed: dict[TopicPartitionKey, int]
    state_dir_deleted: bool


# -- planning -----------------------------------------------------------------------------------------
def topology_topics(topology: Any, application_id: str) -> tuple[list[str], list[str]]:
    """(input topics, internal topics the runtime creates) of ``topology`` for ``application_id``.

    Inputs are the external source topics of the non-global sub-topologies: those the group commits
    offsets for. Global table topics are always restored from their beginning, so they need no reset.
    """
    from edge.runtime.app import resolve_topology

    topo = resolve_topology(topology)
    internal_names = topo.internal_topics
    inputs = [
        t
        for st in topo.subtopologies()
        if not st.is_global
        for t in st.source_topics
        if t not in internal_names
    ]
    internal = [
        *topo.repartition_topics(application_id),
        *topo.changelog_topics(application_id).values(),
        metadata_topic_name(application_id),
    ]
    return list(dict.fromkeys(inputs)), list(dict.fromkeys(internal))


def is_internal_topic_name(topic: str, application_id: str) -> bool:
    """Kafka's rule for an application's internal topics, plus the runtime's own topics."""
    if topic in (metadata_topic_name(application_id), f"{application_id}-eos-probe"):
        return True
    return topic.startswith(f"{application_id}-") and topic.endswith(("-changelog", "-repartition"))


def _admin(client: KafkaClientConfig) -> AdminClient:
    return AdminClient(client.admin())


def group_state(admin: AdminClient, group: str) -> tuple[str, int]:
    """(state name, members) of ``group``; ``("DEAD", 0)`` when it does not exist."""
    try:
        desc = admin.describe_consumer_groups([group], request_timeout=30)[group].result()
    except KafkaException as exc:
        if exc.args and exc.args[0].code() == KafkaError.GROUP_ID_NOT_FOUND:
            return "DEAD", 0
        raise ResetError(f"cannot describe consumer group {group!r}: {exc}") from exc
    state = desc.state
    members = len(desc.members or [])
    name = state.name if isinstance(state, ConsumerGroupState) else str(state)
    if members or state in _ACTIVE_STATES:
        # Some brokers (the embedded one) report STABLE without listing the members.
        members = max(members, 1)
    return name, members


def _refuse_if_active(admin: AdminClient, application_id: str) -> str:
    state, members = group_state(admin, application_id)
    if members:
        raise ActiveMembersError(
            f"consumer group {application_id!r} has active members (state {state}): stop every instance "
            "of the application before resetting it (Kafka's reset tool refuses for the same reason); "
            "a member that was killed leaves the group after its session timeout"
        )
    return state


def committed_offsets(admin: AdminClient, group: str) -> dict[TopicPartitionKey, int]:
    """The group's committed offsets (partitions without one are left out)."""
    try:
        res = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)], request_timeout=30)
        tps = res[group].result().topic_partitions or []
    except KafkaException as exc:
        if exc.args and exc.args[0].code() == KafkaError.GROUP_ID_NOT_FOUND:
            return {}
        raise ResetError(f"cannot read the committed offsets of group {group!r}: {exc}") from exc
    return {(tp.topic, tp.partition): tp.offset for tp in tps if tp.offset >= 0}


def plan_reset(
    client: KafkaClientConfig,
    application_id: str,
    target: ResetTarget,
    *,
    topology: Any = None,
    input_topics: Sequence[str] = (),
    intermediate_topics: Sequence[str] = (),
    state_dir: Path | str | None = None,
    scan_timeout_s: float = 60.0,
) -> ResetPlan:
    """Work out a reset without changing anything.

    ``topology`` (a Topology, StreamsBuilder or a function returning one) names the input and internal
    topics; ``input_topics`` adds to (or, without a topology, replaces) the inputs. ``state_dir`` is the
    runtime's ``state.dir`` (the app's directory below it is deleted). Refuses while the group is active.
    """
    if not application_id:
        raise ResetError("an application.id is required")
    check_application_id(application_id)
    inputs = list(input_topics)
    internal_known: list[str] = []
    if topology is not None:
        topo_inputs, internal_known = topology_topics(topology, application_id)
        inputs = list(dict.fromkeys([*topo_inputs, *inputs]))
    if not inputs:
        raise ResetError(
            f"no input topics for {application_id!r}: pass the app's topology or name the input topics"
        )
    admin = _admin(client)
    existing = partition_counts(client)
    missing = [t for t in [*inputs, *intermediate_topics] if t not in existing]
    if missing:
        raise ResetError(f"input topic(s) {missing} do not exist")
    overlap = sorted(set(inputs) & set(intermediate_topics))
    if overlap:
        raise ResetError(f"topic(s) {overlap} cannot be both input and intermediate topics")
    state = _refuse_if_active(admin, application_id)
    current = committed_offsets(admin, application_id)

    user_topics = set(inputs) | set(intermediate_topics)
    if topology is not None:
        from edge.runtime.app import resolve_topology

        topo = resolve_topology(topology)
        user_topics |= {t for st in topo.subtopologies() for t in [*st.source_topics, *st.sink_topics]}
        user_topics -= set(topo.internal_topics)
    internal = [
        t
        for t in sorted(existing)
        if (t in internal_known or is_internal_topic_name(t, application_id)) and t not in user_topics
    ]

    unknown = sorted({tp for tp in target.offsets if tp[0] not in inputs or tp[1] >= existing[tp[0]]})
    if unknown:
        raise ResetError(
            f"offsets given for {[f'{t}:{p}' for t, p in unknown]}, which are not partitions of the "
            f"input topics {inputs}"
        )
    predicates: dict[TopicPartitionKey, Predicate] = {}
    reasons: dict[TopicPartitionKey, str] = {}
    for topic in inputs:
        for p in range(existing[topic]):
            tp = (topic, p)
            if target.kind == "timestamp":
                ts = target.timestamp_ms
                assert ts is not None
                predicates[tp] = lambda _o, t, ts=ts: t >= ts
                reasons[tp] = "first record at/after the time"
            elif target.kind == "offsets" and tp in target.offsets:
                want = target.offsets[tp]
                predicates[tp] = lambda o, _t, want=want: o >= want
                reasons[tp] = f"offset {want}"
            elif target.kind == "offsets" and tp in current:
                reasons[tp] = "kept"
            else:
                predicates[tp] = lambda _o, _t: True
                reasons[tp] = "earliest"
    for topic in intermediate_topics:
        for p in range(existing[topic]):
            predicates[(topic, p)] = None
            reasons[(topic, p)] = "end"
    scans = scan_partitions(client, predicates, timeout_s=scan_timeout_s)

    partitions: list[PartitionReset] = []
    for tp, reason in reasons.items():
        role = "intermediate" if tp[0] in intermediate_topics else "input"
        if reason == "kept":
            partitions.append(PartitionReset(tp[0], tp[1], current[tp], current[tp], reason, role))
            continue
        scan = scans[tp]
        new = scan.position
        if role == "input":
            reason = _reason(target, tp, scan, reason)
        partitions.append(PartitionReset(tp[0], tp[1], current.get(tp), new, reason, role))

    app_dir = Path(state_dir) / application_id if state_dir is not None else None
    if app_dir is not None and (app_dir.exists() or app_dir.is_symlink()):
        # refused at planning time, so a dry run shows it too (a symlink out of the state dir)
        resolve_inside(app_dir, app_dir.parent, what=f"the local state of {application_id!r}")
    return ResetPlan(
        application_id,
        target,
        partitions,
        internal,
        app_dir,
        bool(app_dir is not None and app_dir.exists()),
        state,
    )


def _reason(target: ResetTarget, tp: TopicPartitionKey, scan: PartitionScan, default: str) -> str:
    """Why a partition gets its new offset, in the words of the target (shown by the plan)."""
    empty = scan.first is None
    if target.kind == "offsets" and tp in target.offsets:
        want = target.offsets[tp]
        if scan.match is None:
            return (
                f"offset {want} (the end)" if want == scan.end else f"offset {want} is past the end: clamped"
            )
        if scan.match != want:
            below = scan.first is not None and want < scan.first
            return (
                f"offset {want} is {'before the first record' if below else 'not in the log'}: next present"
            )
        return default
    if scan.match is None:
        if target.kind == "timestamp":
            return "end: empty partition" if empty else "end: no record at or after the time"
        return "earliest (empty partition)"
    return default


# -- applying -----------------------------------------------------------------------------------------
def _delete_topics(
    admin: AdminClient, client: KafkaClientConfig, topics: list[str], timeout_s: float
) -> None:
    if not topics:
        return
    for name, future in admin.delete_topics(topics, operation_timeout=timeout_s).items():
        try:
            future.result()
        except KafkaException as exc:
            if exc.args and exc.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                continue
            raise ResetError(f"could not delete internal topic {name!r}: {exc}") from exc
    # Deletion is asynchronous on Apache Kafka: a rerun creating the topics again must not meet them.
    deadline = time.monotonic() + timeout_s
    while any(t in partition_counts(client) for t in topics):
        if time.monotonic() > deadline:
            raise ResetError(f"internal topics {topics} still listed {timeout_s:.0f}s after their deletion")
        time.sleep(0.1)


def _commit_offsets(admin: AdminClient, group: str, offsets: Mapping[TopicPartitionKey, int]) -> None:
    if not offsets:
        return
    tps = [TopicPartition(t, p, o) for (t, p), o in sorted(offsets.items())]
    try:
        res = admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, tps)])
        result = res[group].result()
    except KafkaException as exc:
        raise ResetError(f"could not commit the reset offsets of group {group!r}: {exc}") from exc
    failed = [f"{tp.topic}[{tp.partition}]: {tp.error}" for tp in result.topic_partitions if tp.error]
    if failed:
        raise ResetError(f"could not commit the reset offsets of group {group!r}: {failed}")


def _delete_state_dir(app_dir: Path, application_id: str) -> bool:
    if not app_dir.exists():
        return False
    try:
        fd = lock_state_dir(app_dir, application_id)
    except StateDirLockedError as exc:
        raise ActiveMembersError(
            f"{exc}: an instance of {application_id!r} is running on this machine; stop it first"
        ) from None
    try:
        # the id has no separators, so the lexical parent is the state.dir the plan was made for
        remove_tree_inside(app_dir, app_dir.parent, what=f"the local state of {application_id!r}")
    finally:
        unlock_state_dir(fd)
    return True


def apply_reset(client: KafkaClientConfig, plan: ResetPlan, *, timeout_s: float = 30.0) -> ResetResult:
    """Carry out ``plan``: delete the internal topics, commit the new input offsets, delete the local
    state. Checks again that no instance runs, locally or in the group.

    The order makes an interrupted reset safe to repeat: offsets are committed only once the internal
    topics are gone, and the state directory goes last.
    """
    admin = _admin(client)
    if plan.state_dir is not None and plan.state_dir.exists():
        try:
            unlock_state_dir(lock_state_dir(plan.state_dir, plan.application_id))
        except StateDirLockedError as exc:
            raise ActiveMembersError(
                f"{exc}: an instance of {plan.application_id!r} is running on this machine; stop it first"
            ) from None
    _refuse_if_active(admin, plan.application_id)
    # Deleting a topic also drops the group's committed offsets of it (Apache Kafka and the embedded
    # broker both), so the recreated repartition topics are read from their start.
    _delete_topics(admin, client, plan.internal_topics, timeout_s)
    offsets = plan.offsets
    _commit_offsets(admin, plan.application_id, offsets)
    deleted_state = _delete_state_dir(plan.state_dir, plan.application_id) if plan.state_dir else False
    return ResetResult(plan, list(plan.internal_topics), offsets, deleted_state)


def parse_offsets(values: Iterable[str], input_topics: Sequence[str]) -> dict[TopicPartitionKey, int]:
    """``[TOPIC:]PARTITION:OFFSET`` items (the topic may be left out when there is one input topic)."""
    out: dict[TopicPartitionKey, int] = {}
    for item in values:
        parts = item.rsplit(":", 2)
        try:
            if len(parts) == 3:
                topic, partition, offset = parts[0], int(parts[1]), int(parts[2])
            elif len(parts) == 2:
                if len(input_topics) != 1:
                    raise ResetError(
                        f"{item!r}: the application reads {list(input_topics)}; write TOPIC:PARTITION:OFFSET"
                    )
                topic, partition, offset = input_topics[0], int(parts[0]), int(parts[1])
            else:
                raise ValueError(item)
        except ValueError:
            raise ResetError(f"expected [TOPIC:]PARTITION:OFFSET, got {item!r}") from None
        out[(topic, partition)] = offset
    return out
