"""Lake replay: rebuild chosen tables and everything downstream of them, as new Delta versions.

After a change to the silver or gold logic (or to repair days built from bad input), a replay picks the
tables, adds every table downstream of them from the Dagster asset graph (so ``silver/orders`` brings
the gold tables that read it), picks the days (those present, or ``--from``/``--to``) and runs the
same assets with ``full_refresh``: every selected day is recomputed from its inputs and replaced in one
commit per table. The old versions stay readable by time travel until vacuumed.

The chosen tables read their inputs at the latest version, or *as of* an older Delta version or a
timestamp (``input_versions`` in the asset config, ``assets.replay.pins``): bronze for a silver table,
silver for a gold table. Tables downstream of the chosen ones always read what the replay just wrote.

A plan is computed first and changes nothing (``--dry-run`` prints it); running it reports, per table,
the days and the Delta version before → after.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

from dagster import AssetKey, DagsterInstance, Definitions, TimeWindowPartitionMapping, materialize

from edge.errors import StreamhouseError
from orchestration.partitions import DAILY, PARTITION_START, contiguous_ranges
from orchestration.runs import materializations, range_tags

#: Layers a replay rebuilds. Bronze is the source of every rebuild: it is re-ingested from Kafka, not
#: recomputed (its exactly-once offsets live in its own commits).
REBUILT_LAYERS = ("silver", "quarantine", "gold")
#: Tag on every run a replay starts (the Dagster UI can filter on it).
REPLAY_TAG = "streamhouse/replay"


class ReplayError(StreamhouseError):
    """A replay that cannot be planned: unknown table, bronze, bad days, ambiguous or missing input."""


def table_name(key: AssetKey) -> str:
    """``layer/table`` of an asset's Delta table (``<lake_root>/<layer>/<table>``).

    Quarantine assets are keyed ``quarantine/<topic>_quarantine`` in the graph but stored at
    ``quarantine/<topic>``.
    """
    layer, name = key.path[0], key.path[-1]
    if layer == "quarantine" and name.endswith("_quarantine"):
        name = name[: -len("_quarantine")]
    return f"{layer}/{name}"


def normalize_table(name: str) -> str:
    """``silver.orders`` (the query name) or ``silver/orders`` → ``silver/orders``."""
    name = name.strip().strip("/")
    if "/" not in name and "." in name:
        layer, _, rest = name.partition(".")
        name = f"{layer}/{rest}"
    return name


@dataclass
class ReplayStep:
    """One Dagster op of the replay (a multi-asset writes a silver table and its quarantine table)."""

    op: str
    keys: list[AssetKey]
    tables: list[str]
    partitioned: bool
    #: chosen by the user (else: downstream of a chosen table)
    chosen: bool
    #: input tables (``layer/table``) the op reads
    inputs: list[str]
    #: input table -> Delta version read instead of the latest (as-of replays, chosen steps only)
    pins: dict[str, int] = field(default_factory=dict)
    #: table -> Delta version before the replay (None: the table does not exist yet)
    before: dict[str, int | None] = field(default_factory=dict)
    #: table -> Delta version after the replay
    after: dict[str, int | None] = field(default_factory=dict)

    @property
    def config(self) -> dict[str, Any]:
        cfg: dict[str, Any] = {"full_refresh": True}
        if self.pins:
            cfg["input_versions"] = dict(self.pins)
        return {"config": cfg}


@dataclass
class LakeReplayPlan:
    """What a lake replay rebuilds; ``rows()`` is what ``--dry-run`` prints."""

    steps: list[ReplayStep]
    #: days rebuilt in every partitioned table (ISO dates)
    days: list[str]
    #: "latest inputs", or the pinned inputs (``bronze/orders@3``)
    source: str

    def run_config(self, partitioned: bool) -> dict[str, Any]:
        """Run config of the run over the partitioned (or unpartitioned) steps: full refresh + pins."""
        return {"ops": {s.op: s.config for s in self.steps if s.partitioned is partitioned}}

    def selection(self, partitioned: bool) -> list[AssetKey]:
        return [k for s in self.steps if s.partitioned is partitioned for k in s.keys]

    @property
    def ranges(self) -> list[tuple[str, str]]:
        return contiguous_ranges(self.days)

    def rows(self) -> list[tuple[str, str, str, str, str]]:
        """(table, why, days, reads, version before → after) per table."""
        out = []
        for step in self.steps:
            why = "chosen" if step.chosen else "downstream"
            days = _days_label(self.days) if step.partitioned else "whole table"
            reads = ", ".join(f"{t}@{step.pins[t]}" if t in step.pins else t for t in step.inputs) or "-"
            for table in step.tables:
                before = step.before.get(table)
                version = "new" if before is None else f"v{before}"
                if table in step.after:
                    after = step.after[table]
                    version += f" → {'-' if after is None else f'v{after}'}"
                out.append((table, why, days, reads, version))
        return out

    def summary(self) -> str:
        lines = [f"lake replay from {self.source}, {len(self.days)} day(s) {_days_label(self.days)}:"]
        for table, why, days, reads, version in self.rows():
            lines.append(f"  {table} ({why}): {days}; reads {reads}; {version}")
        return "\n".join(lines)


def _days_label(days: Sequence[str]) -> str:
    if not days:
        return "-"
    ranges = contiguous_ranges(list(days))
    return ", ".join(a if a == b else f"{a}..{b}" for a, b in ranges)


# -- planning -----------------------------------------------------------------------------------------
def _table_uri(lake_root: str, table: str) -> str:
    from assets.lake.layout import path_uri

    return path_uri(lake_root, table)


def _latest(uri: str) -> int | None:
    from assets.lineage import pinned_version

    return pinned_version(uri)


def _partition_days(uri: str, version: int | None = None) -> set[str] | None:
    """Days the table holds (values of its partition column); None for an unpartitioned table."""
    from assets.delta.changes import PartitionFiles
    from assets.delta.location import resolve
    from assets.delta.snapshot import open_table

    latest = _latest(uri)
    if latest is None:
        return set()
    version = latest if version is None else version
    columns = open_table(resolve(uri), version=version).metadata().partition_columns
    if not columns:
        return None
    files = PartitionFiles.load(uri, version, columns[0])
    return {k for k in files.files if k}


def version_at(uri: str, when: datetime) -> int:
    """The table's version as of ``when``: the latest commit at or before it (Delta time travel).

    Taken from the commits' own timestamps: deltalake resolves a time before the first commit to
    version 0 instead of refusing it, which would replay from data that did not exist then.
    """
    from assets.delta import history

    when_ms = int(when.timestamp() * 1000)
    try:
        commits = history(uri)
    except Exception as exc:  # TableNotFoundError or a log deltalake cannot read: name the table
        raise ReplayError(f"cannot read the history of {uri}: {exc}") from exc
    versions = [int(c["version"]) for c in commits if int(c.get("timestamp") or 0) <= when_ms]
    if not versions:
        first = min((int(c.get("timestamp") or 0) for c in commits), default=None)
        since = "" if first is None else f" (its first retained commit is at {_iso_ms(first)})"
        raise ReplayError(f"{uri} has no version as of {when.isoformat()}{since}")
    return max(versions)


def _iso_ms(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="seconds")


def _resolve_tables(graph: Any, names: Iterable[str]) -> list[AssetKey]:
    index: dict[str, AssetKey] = {}
    for key in graph.materializable_asset_keys:
        index.setdefault(table_name(key), key)
    keys: list[AssetKey] = []
    for raw in names:
        name = normalize_table(raw)
        layer = name.partition("/")[0]
        if layer == "bronze":
            raise ReplayError(
                f"{name} is the source of a replay and is not rebuilt (its records come from Kafka); "
                f"replay the tables that read it, e.g. silver/{name.partition('/')[2]}"
            )
        key = index.get(name)
        if key is None or layer not in REBUILT_LAYERS:
            choices = sorted(t for t in index if t.partition("/")[0] in REBUILT_LAYERS)
            close = difflib.get_close_matches(name, choices, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else f"; tables: {', '.join(choices)}"
            raise ReplayError(f"unknown table {raw!r}{hint}")
        keys.append(key)
    if not keys:
        raise ReplayError("name at least one table to replay (e.g. silver/orders)")
    return keys


def _requested_days(start: date | None, end: date | None) -> list[str] | None:
    if start is None and end is None:
        return None
    first = start or date.fromisoformat(PARTITION_START)
    last = end or datetime.now(UTC).date()
    if first > last:
        raise ReplayError(f"--from {first} is after --to {last}")
    if last < date.fromisoformat(PARTITION_START):
        raise ReplayError(f"no day in {first}..{last}: partitions start on {PARTITION_START}")
    first = max(first, date.fromisoformat(PARTITION_START))
    return [(first + timedelta(days=i)).isoformat() for i in range((last - first).days + 1)]


def _valid_days(days: Iterable[str]) -> list[str]:
    existing = set(DAILY.get_partition_keys())
    return sorted(d for d in set(days) if d in existing)


def plan_lake_replay(
    defs: Definitions,
    lake_root: str,
    tables: Sequence[str],
    *,
    start: date | None = None,
    end: date | None = None,
    as_of_version: int | None = None,
    as_of_timestamp: datetime | None = None,
    input_table: str | None = None,
) -> LakeReplayPlan:
    """Work out a replay of ``tables`` and everything downstream, without writing anything.

    ``as_of_version`` pins one input table of the chosen tables (``input_table``, or their only
    input); ``as_of_timestamp`` pins each input (or just ``input_table``) to its version at that time.
    """
    if as_of_version is not None and as_of_timestamp is not None:
        raise ReplayError("give either --as-of-version or --as-of-timestamp, not both")
    if as_of_version is not None and as_of_version < 0:
        raise ReplayError(f"--as-of-version must be >= 0, got {as_of_version}")
    graph = defs.resolve_asset_graph()
    chosen_keys = _resolve_tables(graph, tables)

    # Chosen ops, then everything downstream of them (breadth first over the asset graph).
    steps: dict[str, ReplayStep] = {}
    queue: list[tuple[AssetKey, bool]] = [(k, True) for k in chosen_keys]
    while queue:
        key, chosen = queue.pop(0)
        assets_def = defs.resolve_assets_def(key)
        op = assets_def.node_def.name
        if op in steps:
            steps[op].chosen = steps[op].chosen or chosen
            continue
        op_keys = sorted(assets_def.keys, key=lambda k: k.to_user_string())
        parents = sorted(
            {table_name(p) for k in op_keys for p in graph.get(k).parent_keys if p not in assets_def.keys}
        )
        steps[op] = ReplayStep(
            op,
            op_keys,
            [table_name(k) for k in op_keys],
            assets_def.partitions_def is not None,
            chosen,
            parents,
        )
        for k in op_keys:
            queue.extend((child, False) for child in sorted(graph.get(k).child_keys, key=str))
    replayed = {t for s in steps.values() for t in s.tables}
    order = {k: i for i, k in enumerate(graph.toposorted_asset_keys)}
    ordered = sorted(steps.values(), key=lambda s: (s.partitioned, min(order[k] for k in s.keys)))
    seen_partitioned = False
    for step in ordered:
        seen_partitioned = seen_partitioned or step.partitioned
        if seen_partitioned and not step.partitioned:
            raise ReplayError(f"cannot replay {step.tables}: an unpartitioned table below a daily one")

    source = _pin_inputs(ordered, replayed, lake_root, as_of_version, as_of_timestamp, input_table)

    # Days: those requested, else every day a rebuilt table or a chosen table's input holds; widened
    # so each downstream day that reads a rebuilt day is rebuilt too (hopping reads D+1, sessions D±1).
    requested = _requested_days(start, end)
    days: set[str] = set(requested or [])
    if requested is None:
        for step in ordered:
            if not step.partitioned:
                continue
            for table in step.tables:
                days |= _partition_days(_table_uri(lake_root, table)) or set()
            if step.chosen:
                for table in step.inputs:
                    days |= _partition_days(_table_uri(lake_root, table), step.pins.get(table)) or set()
        days = _widen(defs, graph, ordered, days)
    day_list = _valid_days(days)
    if any(s.partitioned for s in ordered) and not day_list:
        raise ReplayError(
            "no day to replay: the tables and their inputs hold no data"
            + (f" between {requested[0]} and {requested[-1]}" if requested else "")
        )
    for step in ordered:
        step.before = {t: _latest(_table_uri(lake_root, t)) for t in step.tables}
    return LakeReplayPlan(ordered, day_list, source)


def _pin_inputs(
    steps: Sequence[ReplayStep],
    replayed: set[str],
    lake_root: str,
    as_of_version: int | None,
    as_of_timestamp: datetime | None,
    input_table: str | None,
) -> str:
    """Set the chosen steps' pins; returns the plan's source label."""
    if as_of_version is None and as_of_timestamp is None:
        if input_table:
            raise ReplayError("--input needs --as-of-version or --as-of-timestamp")
        return "latest inputs"
    # Inputs a chosen table reads that the replay does not rebuild itself.
    candidates = sorted({t for s in steps if s.chosen for t in s.inputs if t not in replayed})
    if input_table:
        wanted = normalize_table(input_table)
        if wanted not in candidates:
            raise ReplayError(
                f"--input {input_table}: the chosen tables read {', '.join(candidates) or 'nothing'} "
                "(inputs rebuilt by the replay itself cannot be pinned)"
            )
        candidates = [wanted]
    if not candidates:
        raise ReplayError("the chosen tables read no input that could be pinned to an older version")
    if as_of_version is not None and len(candidates) > 1:
        raise ReplayError(
            f"--as-of-version is ambiguous: the chosen tables read {', '.join(candidates)}; name one with "
            "--input, or use --as-of-timestamp (each input at its version as of that time)"
        )
    versions: dict[str, int] = {}
    for table in candidates:
        uri = _table_uri(lake_root, table)
        latest = _latest(uri)
        if latest is None:
            raise ReplayError(f"input {table} does not exist ({uri})")
        if as_of_version is not None:
            if as_of_version > latest:
                raise ReplayError(f"{table} has versions 0..{latest}; --as-of-version {as_of_version}")
            versions[table] = as_of_version
        else:
            assert as_of_timestamp is not None
            versions[table] = version_at(uri, as_of_timestamp)
    for step in steps:
        if step.chosen:
            step.pins = {t: v for t, v in versions.items() if t in step.inputs}
    return ", ".join(f"{t}@{v}" for t, v in sorted(versions.items()))


def _widen(defs: Definitions, graph: Any, steps: Sequence[ReplayStep], days: set[str]) -> set[str]:
    """Add each downstream day that reads a rebuilt input day (its partition mapping's window)."""
    out = set(days)
    for step in steps:
        if step.chosen or not step.partitioned:
            continue
        assets_def = defs.resolve_assets_def(step.keys[0])
        for key in step.keys:
            for parent in graph.get(key).parent_keys:
                mapping = assets_def.get_partition_mapping(parent)
                if not isinstance(mapping, TimeWindowPartitionMapping):
                    continue
                # Day G reads parent days G+start..G+end, so parent day D is read by G in D-end..D-start.
                lo, hi = mapping.start_offset, mapping.end_offset
                for d in list(out):
                    day = date.fromisoformat(d)
                    out |= {(day - timedelta(days=i)).isoformat() for i in range(lo, hi + 1)}
    return out


# -- running ------------------------------------------------------------------------------------------
@dataclass
class LakeReplayResult:
    plan: LakeReplayPlan
    #: Dagster run ids, in order
    run_ids: list[str]
    #: asset key -> materialization metadata (values) of the last run that materialized it
    materializations: dict[str, dict[str, Any]]


def _assets(defs: Definitions, checks: bool) -> list[Any]:
    """The definitions' assets and, with ``checks``, their asset checks: selecting a table's asset
    then runs its checks too, so a rebuilt table is guarded as the daily job guards it."""
    from dagster import AssetsDefinition

    out = [a for a in (defs.assets or []) if isinstance(a, AssetsDefinition)]
    if checks:
        out += [c for c in (defs.asset_checks or []) if isinstance(c, AssetsDefinition)]
    return out


def run_lake_replay(
    plan: LakeReplayPlan,
    defs: Definitions,
    *,
    resources: Mapping[str, Any],
    lake_root: str,
    instance: DagsterInstance | None = None,
    run_config: Mapping[str, Any] | None = None,
    checks: bool = True,
    progress: Callable[[str], None] = lambda _msg: None,
) -> LakeReplayResult:
    """Run the plan: the unpartitioned tables first, then one run per contiguous range of days.

    ``run_config`` is merged into each run's (loggers, ...). ``checks`` runs the quality checks of
    the rebuilt tables (those ``defs`` has) in the same runs. Fails with the run's error when a step
    fails; the tables replaced before that keep their new versions (each is one atomic commit).
    """
    assets = _assets(defs, checks)
    runs: list[tuple[list[AssetKey], dict[str, Any], dict[str, str], str]] = []
    unpartitioned = plan.selection(False)
    if unpartitioned:
        tables = [t for s in plan.steps if not s.partitioned for t in s.tables]
        runs.append((unpartitioned, plan.run_config(False), {}, f"{', '.join(tables)} (whole tables)"))
    partitioned = plan.selection(True)
    if partitioned:
        for first, last in plan.ranges:
            label = first if first == last else f"{first}..{last}"
            runs.append((partitioned, plan.run_config(True), range_tags(first, last), f"days {label}"))
    run_ids: list[str] = []
    mats: dict[str, dict[str, Any]] = {}
    for i, (selection, config, tags, label) in enumerate(runs, 1):
        progress(f"[{i}/{len(runs)}] rebuilding {label} ...")
        result = materialize(
            assets,
            selection=selection,
            run_config={**(run_config or {}), **config},
            resources=dict(resources),
            instance=instance,
            tags={**tags, REPLAY_TAG: "true"},
        )
        if not result.success:
            raise ReplayError(f"replay run {result.run_id} ({label}) failed")
        run_ids.append(result.run_id)
        mats.update(materializations(result))
    for step in plan.steps:
        step.after = {t: _latest(_table_uri(lake_root, t)) for t in step.tables}
    return LakeReplayResult(plan, run_ids, mats)


def parse_timestamp(text: str) -> datetime:
    """ISO-8601 (``2026-01-02T10:00``, naive means UTC, ``Z`` accepted) or epoch milliseconds."""
    raw = text.strip()
    if raw.isdigit():
        return datetime.fromtimestamp(int(raw) / 1000, UTC)
    try:
        value = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise ReplayError(f"expected an ISO-8601 time or epoch milliseconds, got {text!r}") from None
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def parse_day(text: str, option: str) -> date:
    try:
        return date.fromisoformat(text.strip())
    except ValueError:
        raise ReplayError(f"{option}: expected a date YYYY-MM-DD, got {text!r}") from None
