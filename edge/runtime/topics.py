"""Which topics an application reads, writes and owns, and their partition counts.

Planned once at start: external source topics must exist; every sub-topology's source topics must have
the same partition count (co-partitioning: a task reads partition *p* of each, so a join would otherwise
miss matches); repartition topics get the partition count of the sub-topology that writes them;
changelog topics get the count of the sub-topology that owns the store (compacted; a window or session
store's also deleted after its retention plus ``windowstore.changelog.additional.retention.ms``, so they
stay bounded); the instances topic has one partition.

Checked at start and again after every rebalance and every reconnection to the cluster
(:func:`validate_topics`), as Kafka Streams' assignor does: a missing source topic is a
:class:`MissingSourceTopicError` (Kafka's ``MissingSourceTopicException``), a missing internal topic is
created, and an internal topic with another partition count than planned is an
:class:`InternalTopicPartitionsError` -- it would mean a changelog partition no longer matches its task
(a broker that lost its topics and re-created them with its default count, or a hand-made topic).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource

from edge.errors import StreamhouseError, TopologyError
from edge.kafka import KafkaClientConfig, TopicSpec, create_topics
from edge.state.window import ADDITIONAL_CHANGELOG_RETENTION_MS
from edge.topology.stores import changelog_topic_config

log = logging.getLogger(__name__)


class MissingTopicError(StreamhouseError):
    """A source, global or output topic the topology names does not exist (topics are never auto-created)."""


MissingSourceTopicError = MissingTopicError


class CoPartitioningError(TopologyError):
    pass


class InternalTopicPartitionsError(StreamhouseError):
    """An internal topic (changelog, repartition, instances) or a source topic has another partition
    count than the application's tasks were planned with (Kafka Streams: "Existing internal topic ... has
    invalid partitions")."""


def metadata_topic_name(application_id: str) -> str:
    return f"{application_id}-instances"


@dataclass
class SubtopologyPlan:
    id: int
    source_topics: list[str]
    partitions: int
    #: store name -> changelog topic (None when logging is disabled)
    stores: dict[str, str | None] = field(default_factory=dict)


@dataclass
class TopicPlan:
    subtopologies: dict[int, SubtopologyPlan]
    global_topics: dict[str, int]
    internal: list[TopicSpec]
    application_id: str = ""
    #: internal topic -> what it is (for error messages)
    roles: dict[str, str] = field(default_factory=dict)
    #: the existing changelogs' cleanup settings were compared with the plan (once, at start)
    configs_checked: bool = False

    def task_ids(self) -> list[tuple[int, int]]:
        return [(st.id, p) for st in self.subtopologies.values() for p in range(st.partitions)]

    def subtopology_of_topic(self) -> dict[str, int]:
        return {t: st.id for st in self.subtopologies.values() for t in st.source_topics}

    def source_topics(self) -> list[str]:
        return [t for st in self.subtopologies.values() for t in st.source_topics]


def partition_counts(client: KafkaClientConfig) -> dict[str, int]:
    """Partitions per existing topic (topics with an error in the metadata are left out)."""
    admin = AdminClient(client.admin())
    try:
        meta = admin.list_topics(timeout=30)
    except KafkaException as exc:
        raise StreamhouseError(f"cannot reach Kafka at {client.bootstrap_servers}: {exc}") from exc
    return {name: len(t.partitions) for name, t in meta.topics.items() if t.error is None}


def _store_changelog_config(
    topology: Any, store: str, additional_retention_ms: int = ADDITIONAL_CHANGELOG_RETENTION_MS
) -> dict[str, str]:
    store_def = getattr(topology, "_stores", {}).get(store)
    builder = getattr(store_def, "builder", None)
    return changelog_topic_config(builder, additional_retention_ms) if builder is not None else {}


def plan_topics(
    topology: Any,
    application_id: str,
    client: KafkaClientConfig,
    *,
    replication_factor: int = -1,
    windowstore_changelog_additional_retention_ms: int = ADDITIONAL_CHANGELOG_RETENTION_MS,
) -> TopicPlan:
    existing = partition_counts(client)
    internal_names = topology.internal_topics
    resolve = topology.resolve_topic
    subs = [st for st in topology.subtopologies() if not st.is_global]

    globals_: dict[str, int] = {}
    for st in topology.subtopologies():
        if not st.is_global:
            continue
        for topic in st.source_topics:
            name = resolve(topic, application_id)
            if name not in existing:
                raise MissingTopicError(
                    f"global table topic {name!r} does not exist; create it before starting "
                    f"{application_id!r}"
                )
            globals_[name] = existing[name]

    missing = sorted(
        {t for st in subs for t in st.source_topics if t not in internal_names and t not in existing}
    )
    if missing:
        raise MissingTopicError(
            f"source topic(s) {', '.join(repr(t) for t in missing)} do not exist; create them before "
            f"starting application {application_id!r} (topics are never auto-created)"
        )
    missing_sinks = sorted(
        {t for st in subs for t in st.sink_topics if t not in internal_names and t not in existing}
    )
    if missing_sinks:
        raise MissingTopicError(
            f"output topic(s) {', '.join(repr(t) for t in missing_sinks)} do not exist; create them before "
            f"starting application {application_id!r} (topics are never auto-created)"
        )
    # Repartition topics take the partition count of the sub-topology writing into them.
    counts: dict[str, int] = {t: existing[t] for st in subs for t in st.source_topics if t in existing}
    requested: dict[str, int | None] = {}
    if hasattr(topology, "repartition_topics"):
        requested = topology.repartition_topics(application_id)
    for t in internal_names:
        resolved = resolve(t, application_id)
        if requested.get(resolved):
            counts[t] = int(requested[resolved])  # Repartitioned.with_number_of_partitions(n)
    # Kafka's CopartitionedTopicsEnforcer: an internal topic read beside external topics (the other side
    # of a join: a foreign-key join's subscription topic beside the right table, its response topic
    # beside the left table) takes their partition count rather than its writer's.
    for st in subs:
        external = {counts[t] for t in st.source_topics if t not in internal_names and t in counts}
        if len(external) == 1:
            n = next(iter(external))
            for t in st.source_topics:
                if t in internal_names and t not in counts:
                    counts[t] = n
    for _ in range(len(subs) + 1):
        changed = False
        for st in subs:
            known = [counts[t] for t in st.source_topics if t in counts]
            if not known:
                continue
            for sink in st.sink_topics:
                if sink in internal_names and sink not in counts:
                    counts[sink] = max(known)
                    changed = True
        if not changed:
            break
    # Only what the topology cannot tell (it always can for repartition topics written by a
    # sub-topology) falls back to an existing topic's count; everything else is then validated.
    for t in internal_names:
        resolved = resolve(t, application_id)
        if t not in counts and resolved in existing:
            counts[t] = existing[resolved]
    plans: dict[int, SubtopologyPlan] = {}
    internal: list[TopicSpec] = []
    roles: dict[str, str] = {}
    for st in subs:
        per_topic = {resolve(t, application_id): counts.get(t) for t in st.source_topics}
        unknown = [t for t, n in per_topic.items() if n is None]
        if unknown:
            raise TopologyError(
                f"cannot tell the partition count of repartition topic(s) {unknown} of sub-topology {st.id}"
            )
        distinct = set(per_topic.values())
        if len(distinct) > 1:
            detail = ", ".join(f"{t!r} has {n}" for t, n in per_topic.items())
            raise CoPartitioningError(
                f"sub-topology {st.id} reads topics that are not co-partitioned: {detail} partitions. "
                "Joined/merged inputs must have the same number of partitions (repartition one side, "
                "e.g. with through()/repartition(), or recreate the topic)"
            )
        partitions = distinct.pop()
        for t in st.source_topics:
            if t in internal_names:
                roles[resolve(t, application_id)] = f"repartition topic read by sub-topology {st.id}"
                # Kafka Streams' repartition topic settings: records are purged by the app once consumed,
                # never by time (event times of replayed or late data may be far in the past)
                internal.append(
                    TopicSpec(
                        resolve(t, application_id),
                        partitions,
                        replication_factor,
                        config={"cleanup.policy": "delete", "retention.ms": "-1"},
                    )
                )
        changelogs = topology.changelog_topics(application_id)
        stores: dict[str, str | None] = {}
        for store in st.stores:
            topic = changelogs.get(store)
            stores[store] = topic
            if topic is not None:
                roles[topic] = f"changelog of store {store!r} in sub-topology {st.id}"
                cfg = _store_changelog_config(
                    topology, store, windowstore_changelog_additional_retention_ms
                ) or {"cleanup.policy": "compact"}
                internal.append(TopicSpec(topic, partitions, replication_factor, config=cfg))
        plans[st.id] = SubtopologyPlan(st.id, list(per_topic), partitions, stores)
    internal.append(
        TopicSpec(
            metadata_topic_name(application_id), 1, replication_factor, config={"cleanup.policy": "compact"}
        )
    )
    roles[metadata_topic_name(application_id)] = "instances topic (who hosts what)"
    return TopicPlan(plans, globals_, internal, application_id, roles)


def validate_topics(plan: TopicPlan, client: KafkaClientConfig) -> list[str]:
    """Check the source and internal topics against the plan; create missing internal topics.

    Returns the internal topics created. Raises :class:`MissingSourceTopicError` when a source topic is
    gone (internal topics are then left alone: the application cannot run anyway) and
    :class:`InternalTopicPartitionsError` naming the first topic whose partition count is not the planned
    one -- an exact match, because task *p* writes partition *p* of its changelogs and reads partition *p*
    of its repartition topics.
    """
    existing = partition_counts(client)
    internal_names = {spec.name for spec in plan.internal}
    app = plan.application_id or "the application"
    missing = sorted(
        {t for t in plan.source_topics() if t not in internal_names and t not in existing}
        | {t for t in plan.global_topics if t not in existing}
    )
    if missing:
        raise MissingSourceTopicError(
            f"source topic(s) {', '.join(repr(t) for t in missing)} of application {app!r} do not exist "
            "(deleted, or the broker lost its topics); create them and restart the application"
        )
    for st in plan.subtopologies.values():
        for topic in st.source_topics:
            actual = existing.get(topic)
            if topic not in internal_names and actual != st.partitions:
                raise InternalTopicPartitionsError(
                    f"source topic {topic!r} has {actual} partitions but application {app!r} was planned "
                    f"with {st.partitions} (its tasks and changelogs are sized for that); restore the "
                    "topic's partition count or reset the application (a new application.id)"
                )
    if not plan.configs_checked:
        plan.configs_checked = True
        _warn_unbounded_changelogs(plan, client, existing)
    to_create = []
    for spec in plan.internal:
        actual = existing.get(spec.name)
        if actual is None:
            to_create.append(spec)
        elif actual != spec.partitions:
            role = plan.roles.get(spec.name, "internal topic")
            raise InternalTopicPartitionsError(
                f"existing internal topic {spec.name!r} ({role}) has invalid partitions: expected: "
                f"{spec.partitions}; actual: {actual}. Delete the topic (or reset the application "
                f"{app!r}) before starting it again"
            )
    return create_topics(client, to_create)


def _warn_unbounded_changelogs(plan: TopicPlan, client: KafkaClientConfig, existing: dict[str, int]) -> None:
    """Warn about an existing window or session changelog that would grow without bound.

    Kafka Streams sets an internal topic's config only when it creates the topic, so a changelog made
    before (by an older version, or by hand) keeps ``cleanup.policy=compact`` forever. Nothing is
    altered here either (an operator may have chosen it); the warning says what Kafka Streams would
    have created and how to apply it.
    """
    bounded = {
        spec.name: spec.config
        for spec in plan.internal
        if spec.name in existing and "delete" in spec.config.get("cleanup.policy", "")
    }
    if not bounded:
        return
    admin = AdminClient(client.admin())
    resources = [ConfigResource(ConfigResource.Type.TOPIC, name) for name in sorted(bounded)]
    try:
        described = {r.name: f.result(timeout=10) for r, f in admin.describe_configs(resources).items()}
    except Exception as exc:  # a check for a warning must not stop the app
        log.info("could not read the configs of the existing changelog topics: %s", exc)
        return
    for name, entries in described.items():
        want = bounded[name]
        policy = entries.get("cleanup.policy")
        have_policy = policy.value if policy is not None else ""
        if "delete" in (have_policy or "") or not want.get("retention.ms"):
            continue
        log.warning(
            "changelog topic %r (%s) has cleanup.policy=%s, so it grows without bound; Kafka Streams "
            "creates it with cleanup.policy=compact,delete and retention.ms=%s (the store's retention + "
            "windowstore.changelog.additional.retention.ms). It is left as it is; to apply: "
            "kafka-configs.sh --alter --entity-type topics --entity-name %s "
            "--add-config cleanup.policy=[compact,delete],retention.ms=%s",
            name,
            plan.roles.get(name, "changelog"),
            have_policy,
            want["retention.ms"],
            name,
            want["retention.ms"],
        )


def ensure_internal_topics(plan: TopicPlan, client: KafkaClientConfig) -> list[str]:
    """Start-up check: :func:`validate_topics` (kept under the name callers know)."""
    return validate_topics(plan, client)
