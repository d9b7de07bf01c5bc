"""Sensors: Kafka lag starts ingestion; declarative automation carries bronze's days downstream.

``kafka_lag_sensor`` compares each ingested topic's end offsets with the offsets it saw when it last
requested an ingest run (its cursor) and with the offsets bronze has committed (its Delta commits: so
records the demo or a run from the UI already ingested never start a run, even with an empty cursor),
and requests ``ingest_job`` when new records wait: at once when
at least ``min_records`` wait, else once the first of them has waited ``max_wait_s``; never while an
ingest (``ingest_job`` or a bronze materialization) is queued or running. It asks the broker for
watermarks only (on the embedded broker also the last record batch of each partition, whose reported
end is off; no consumer group is joined), so it is cheap enough to be on by default; when it requests
a run it also records an observation of each topic's offsets, so the topic assets stay current
without a run of their own. When it cannot reach Kafka the tick is skipped with one line (the address and
``streamhouse broker start``), and the sensor's log says so once when Kafka goes away and once when it is
back (the state lives in its cursor): a failed tick made the daemon print a ~40-line traceback every 30 s
into the terminal of ``make dagster`` for as long as the broker was stopped.

``edge_apps_observer`` records an observation of each edge app (topology, stores, /metrics) when it
starts, stops or makes progress, so the ``edge/<app>`` nodes show what runs without a run of their own.

``daily_automation`` evaluates the silver and gold assets' ``AutomationCondition``
(``assets.automation``: the days bronze's new events touched) in the code location, since the
condition is Python of ours; it replaced the ``bronze_to_daily`` multi-asset sensor.
"""

import hashlib
import json
import socket
import time
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from dagster import (
    AssetKey,
    AssetObservation,
    AssetSelection,
    AutomationConditionSensorDefinition,
    BetaWarning,
    DefaultSensorStatus,
    RunRequest,
    RunsFilter,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)

from assets.automation import UNFINISHED
from assets.bronze.assets import BRONZE_TOPICS, bronze_key
from assets.edge_apps.assets import live_metadata, static_metadata, topology_version
from assets.edge_apps.metrics import LiveMetrics
from assets.edge_apps.metrics import fetch as fetch_metrics
from assets.edge_apps.registry import EDGE_APPS, EdgeApp
from assets.kafka.assets import topic_data_version, topic_metadata
from assets.kafka.keys import edge_app_key, topic_key
from assets.kafka.offsets import TopicOffsets, topic_offsets
from assets.resources import KafkaResource, LakeResource
from orchestration.jobs import ingest_job

#: Tag of a lag sensor's run: how many records waited when it was requested.
PENDING_TAG = "streamhouse/pending_records"

#: Run as soon as this many records wait (1: every new record starts ingestion on the next tick).
DEFAULT_MIN_RECORDS = 1
#: Fewer records than ``min_records`` still get ingested once the first of them waited this long.
DEFAULT_MAX_WAIT_S = 300.0
LAG_SENSOR = "kafka_lag_sensor"
AUTOMATION_SENSOR = "daily_automation"
EDGE_OBSERVER = "edge_apps_observer"


#: Seconds to wait for a TCP connection to each bootstrap server before calling Kafka unreachable.
CONNECT_TIMEOUT_S = 2.0
UNREACHABLE_HINT = "start it with `streamhouse broker start`, or check bootstrap_servers"


def unreachable_reason(bootstrap_servers: str, timeout_s: float = CONNECT_TIMEOUT_S) -> str | None:
    """Why none of ``bootstrap_servers`` accepts a TCP connection (``[Errno 111] Connection refused``),
    or None when one does. A refused port is known at once, where the Kafka client would retry until its
    timeout and then report only ``_TRANSPORT``."""
    errors: list[str] = []
    for server in bootstrap_servers.split(","):
        host, _, port = server.strip().rpartition(":")
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
                return None
        except (OSError, ValueError) as exc:
            errors.append(str(exc) or type(exc).__name__)
    return "; ".join(dict.fromkeys(errors)) or "no bootstrap servers"


@dataclass
class LagCursor:
    """What the lag sensor remembers between ticks (serialized as JSON in the sensor's cursor)."""

    #: physical topic -> partition -> end offset seen when the last run was requested
    seen: dict[str, dict[int, int]] = field(default_factory=dict)
    #: when records below ``min_records`` were first found waiting (epoch seconds), else None
    pending_since: float | None = None
    #: why Kafka was unreachable at the last tick (None: it was reachable), so the sensor's log says
    #: so once per change and not at every tick
    unreachable: str | None = None

    @classmethod
    def parse(cls, raw: str | None) -> "LagCursor":
        if not raw:
            return cls()
        data = json.loads(raw)
        seen = {t: {int(p): int(o) for p, o in parts.items()} for t, parts in data.get("seen", {}).items()}
        return cls(seen, data.get("pending_since"), data.get("unreachable"))

    def dump(self) -> str:
        seen = {t: {str(p): o for p, o in sorted(parts.items())} for t, parts in sorted(self.seen.items())}
        data: dict[str, Any] = {"seen": seen, "pending_since": self.pending_since}
        if self.unreachable is not None:
            data["unreachable"] = self.unreachable
        return json.dumps(data, sort_keys=True)


def new_records(
    seen: Mapping[int, int], end: Mapping[int, int], committed: Mapping[int, int] | None = None
) -> int:
    """Records appended since ``seen`` that bronze has not ingested yet (``committed``: the next offset
    per partition in bronze's Delta commits). Without ``committed`` the cursor alone counted, so the
    first tick after ``make demo`` (an empty cursor) requested an ingest for every record bronze already
    held ("40410 new record(s)", 0 ingested). A partition whose end went back was recreated (the
    embedded broker keeps topics in memory): all of it is new."""
    committed = committed or {}
    total = 0
    for p, e in end.items():
        before = seen.get(p, 0)
        if e < before:
            total += e
        else:
            total += max(0, e - max(before, committed.get(p, 0)))
    return total


@dataclass
class LagDecision:
    run: bool
    pending: int
    reason: str
    cursor: LagCursor


def decide(
    cursor: LagCursor,
    offsets: Mapping[str, TopicOffsets],
    *,
    now: float,
    min_records: int,
    max_wait_s: float,
    committed: Mapping[str, Mapping[int, int]] | None = None,
) -> LagDecision:
    """Whether to request ingestion now, and the cursor to keep (pure: the sensor's whole policy).

    ``committed``: per physical topic, bronze's next offset per partition; records below it are already
    ingested, whatever the cursor says."""
    committed = committed or {}
    existing = {t: o for t, o in offsets.items() if o.exists}
    pending = sum(new_records(cursor.seen.get(t, {}), o.end, committed.get(t)) for t, o in existing.items())
    current = {**cursor.seen, **{t: dict(o.end) for t, o in existing.items()}}
    if pending == 0:
        missing = sorted(t for t, o in offsets.items() if not o.exists)
        gone = f"; not on the broker yet: {', '.join(missing)}" if missing else ""
        return LagDecision(
            False, 0, f"no new records in {len(existing)} topic(s) since the last run request{gone}", cursor
        )
    if pending >= min_records:
        return LagDecision(True, pending, f"{pending} new record(s) wait", LagCursor(current, None))
    since = cursor.pending_since if cursor.pending_since is not None else now
    waited = now - since
    if waited >= max_wait_s:
        reason = f"{pending} new record(s) waited {waited:.0f}s (max wait {max_wait_s:.0f}s)"
        return LagDecision(True, pending, reason, LagCursor(current, None))
    reason = (
        f"{pending} new record(s) wait, fewer than min_records={min_records}; ingesting at the latest "
        f"in {max_wait_s - waited:.0f}s"
    )
    return LagDecision(False, pending, reason, LagCursor(cursor.seen, since))


def bronze_offsets(
    lake: LakeResource, physical: Mapping[str, str], warn: Callable[[str], None]
) -> dict[str, dict[int, int]]:
    """Per physical topic, the next offset per partition bronze has committed (its Delta app
    transactions, as the ingest resumes from them). A table that cannot be read counts as empty: the
    sensor then errs towards an ingest, which finds its own offsets."""
    from assets.bronze.ingest import committed_offsets

    out: dict[str, dict[int, int]] = {}
    for topic, logical in physical.items():
        try:
            out[topic] = committed_offsets(lake.table_uri("bronze", logical), topic)
        except Exception as exc:  # a damaged table must not stop the sensor
            warn(f"bronze/{logical}: committed offsets not readable ({exc}); counting from the cursor")
    return out


def ingest_in_progress(context: SensorEvaluationContext, bronze: set[AssetKey]) -> str | None:
    """The id of a queued or running run that ingests (``ingest_job``, or a materialization of a
    bronze asset launched from the UI), if any: a second ingest would race it for the same offsets
    (bronze stays exactly once, so one of the two would fail its commit or find nothing to do)."""
    for record in context.instance.get_run_records(filters=RunsFilter(statuses=list(UNFINISHED)), limit=50):
        run = record.dagster_run
        if run.job_name == ingest_job.name or (run.asset_selection or set()) & bronze:
            return run.run_id
    return None


def build_kafka_lag_sensor(
    topics: Iterable[str] = BRONZE_TOPICS,
    *,
    name: str = LAG_SENSOR,
    min_records: int = DEFAULT_MIN_RECORDS,
    max_wait_s: float = DEFAULT_MAX_WAIT_S,
    minimum_interval_seconds: int = 30,
    default_status: DefaultSensorStatus = DefaultSensorStatus.RUNNING,
) -> SensorDefinition:
    """The lag sensor over ``topics`` (logical names; ``KafkaResource.topic_prefix`` applies)."""
    logical = list(topics)
    bronze = {bronze_key(t) for t in logical}

    @sensor(
        name=name,
        job=ingest_job,
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=default_status,
        description=(
            f"Requests ingest_job when new records wait in {', '.join(logical)} (at least {min_records}, "
            f"or any once {max_wait_s:.0f}s passed); the cursor holds the end offsets seen."
        ),
    )
    def _lag(
        context: SensorEvaluationContext, kafka: KafkaResource, lake: LakeResource
    ) -> SensorResult | SkipReason:
        busy = ingest_in_progress(context, bronze)
        if busy:
            # Records arriving meanwhile stay counted: the cursor only moves when a run is requested.
            return SkipReason(f"an ingest run ({busy}) is still in progress")
        physical = {kafka.topic(t): t for t in logical}
        previous = LagCursor.parse(context.cursor)
        offsets: Mapping[str, TopicOffsets] | None = None
        servers = ""
        try:
            client = kafka.client()
        except Exception as exc:  # no servers configured and no local broker recorded
            down = f"Kafka not reachable: {_first_line(exc)}"
        else:
            servers = client.bootstrap_servers
            refused = unreachable_reason(servers)
            down = f"Kafka not reachable at {servers}: {refused}; {UNREACHABLE_HINT}" if refused else None
            if down is None:
                try:
                    offsets = topic_offsets(client, physical, timeout_s=5.0)
                except Exception as exc:  # it accepted a connection but did not answer as Kafka
                    down = f"Kafka not reachable at {servers}: {_first_line(exc)}; {UNREACHABLE_HINT}"
        if offsets is None:
            reason = down or "Kafka not reachable"
            if previous.unreachable is None:
                context.log.warning(reason)
            return SensorResult(skip_reason=reason, cursor=replace(previous, unreachable=reason).dump())
        if previous.unreachable is not None:
            context.log.info(f"Kafka reachable again at {servers}")
            previous = replace(previous, unreachable=None)
        decision = decide(
            previous,
            offsets,
            now=time.time(),
            min_records=min_records,
            max_wait_s=max_wait_s,
            committed=bronze_offsets(lake, physical, context.log.warning),
        )
        cursor = decision.cursor.dump()
        if not decision.run:
            return SensorResult(skip_reason=decision.reason, cursor=cursor)
        run_key = hashlib.sha256(cursor.encode()).hexdigest()[:20]
        context.log.info(f"requesting ingest_job: {decision.reason}")
        observations = [
            AssetObservation(
                asset_key=topic_key(physical[t]),
                metadata=topic_metadata(o),  # type: ignore[arg-type]
                tags={"dagster/data_version": topic_data_version(o).value},
            )
            for t, o in offsets.items()
        ]
        return SensorResult(
            run_requests=[RunRequest(run_key=run_key, tags={PENDING_TAG: str(decision.pending)})],
            cursor=cursor,
            asset_events=observations,
        )

    return _lag


def _first_line(exc: BaseException) -> str:
    """An error as one line (a client error's message may carry the broker's multi-line detail)."""
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


kafka_lag_sensor = build_kafka_lag_sensor()

with warnings.catch_warnings():  # `use_user_code_server` is beta in Dagster 1.13; our condition needs it
    warnings.simplefilter("ignore", BetaWarning)
    daily_automation = AutomationConditionSensorDefinition(
        AUTOMATION_SENSOR,
        target=AssetSelection.groups("silver", "gold"),
        use_user_code_server=True,
        minimum_interval_seconds=30,
        default_status=DefaultSensorStatus.RUNNING,
        description="Silver events and gold follow the days bronze's new events touched (assets.automation).",
    )


def edge_app_summary(live: LiveMetrics) -> str:
    """What has to change for the edge observer to record a new observation of an app."""
    if not live.reachable:
        return "down"
    processed = int(live.totals.get("records_processed_total", 0))
    return f"{','.join(sorted(set(live.states)))}:{processed}"


def build_edge_observer_sensor(
    apps: Iterable[EdgeApp] = EDGE_APPS,
    *,
    name: str = EDGE_OBSERVER,
    minimum_interval_seconds: int = 120,
    default_status: DefaultSensorStatus = DefaultSensorStatus.RUNNING,
) -> SensorDefinition:
    """Observes each edge app (topology, stores, guarantee, /metrics) when its state changed.

    The apps run outside Dagster, so without this the ``edge/<app>`` nodes would stay unobserved until
    someone ran ``observe_job``. One HTTP request per app and tick (refused at once when an app is not
    running); an observation is recorded only on the first tick and when an app started, stopped or
    processed records since the last one, so the event log does not grow with idle ticks.
    """
    registered = list(apps)

    @sensor(
        name=name,
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=default_status,
        description="Records an observation of each edge app when it starts, stops or makes progress.",
    )
    def _observe(context: SensorEvaluationContext) -> SensorResult:
        last: dict[str, str] = json.loads(context.cursor) if context.cursor else {}
        current: dict[str, str] = {}
        events = []
        for app in registered:
            live = fetch_metrics(app.server)
            current[app.application_id] = edge_app_summary(live)
            if last.get(app.application_id) != current[app.application_id]:
                events.append(
                    AssetObservation(
                        asset_key=edge_app_key(app.application_id),
                        metadata={**static_metadata(app), **live_metadata(live)},  # type: ignore[arg-type]
                        tags={"dagster/data_version": topology_version(app).value},
                    )
                )
        cursor = json.dumps(current, sort_keys=True)
        if not events:
            return SensorResult(skip_reason="no edge app started, stopped or made progress", cursor=cursor)
        return SensorResult(asset_events=events, cursor=cursor)

    return _observe


edge_observer = build_edge_observer_sensor()

SENSORS: list[Any] = [kafka_lag_sensor, daily_automation, edge_observer]


def build_sensors(
    *, min_records: int = DEFAULT_MIN_RECORDS, max_wait_s: float = DEFAULT_MAX_WAIT_S
) -> list[Any]:
    """The project's sensors with the lag sensor's thresholds from the settings (``lag_*``)."""
    if (min_records, max_wait_s) == (DEFAULT_MIN_RECORDS, DEFAULT_MAX_WAIT_S):
        return SENSORS
    return [
        build_kafka_lag_sensor(min_records=min_records, max_wait_s=max_wait_s),
        daily_automation,
        edge_observer,
    ]
