"""Lake replay end to end (real broker, Spark and Delta): plans, as-of inputs, logic changes.

One small lake is built once for the module from two ingests (so bronze has an older version to
replay from) and replayed in place; a second lake built from scratch under changed logic is the
reference a replay must equal.
"""

from __future__ import annotations

import json
import uuid
import warnings
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from dagster import DagsterInstance, Definitions

from assets import sample_data
from assets.delta import history, read_arrow, table_version
from edge.kafka import KafkaClientConfig
from orchestration.pipeline import materializations, run_daily, run_ingest

pytestmark = [pytest.mark.broker, pytest.mark.spark, pytest.mark.slow]

warnings.filterwarnings("ignore", message=".*is currently in beta.*")
warnings.filterwarnings("ignore", message=".*is superseded.*")

GOLD = ["gold/revenue_tumbling_5m", "gold/revenue_hopping_10m", "gold/orders_enriched"]
#: The tables a replay of silver/orders rebuilds (its quarantine table and the gold tables reading it).
SILVER_ORDERS_REPLAY = {"silver/orders", "quarantine/orders", *GOLD}


@dataclass
class Lake:
    defs: Definitions
    resources: dict[str, Any]
    root: Path
    instance: DagsterInstance

    def uri(self, table: str) -> str:
        return f"{self.root}/{table}"


def _lake(client: KafkaClientConfig, root: Path, prefix: str) -> Lake:
    """The lake's assets and jobs on the shared broker and Spark session; without the quality checks,
    which are not what these tests are about (and would double their Spark work)."""
    from orchestration.definitions import ALL_ASSETS
    from orchestration.jobs import JOBS
    from orchestration.resources import ExistingSparkResource, build_resources
    from orchestration.settings import Settings

    root.mkdir(parents=True, exist_ok=True)
    settings = Settings(
        broker_profile=client.profile, bootstrap_servers=client.bootstrap_servers, lake_root=root
    )
    resources = build_resources(settings, topic_prefix=prefix, spark=ExistingSparkResource())
    defs = Definitions(assets=ALL_ASSETS, jobs=JOBS, resources=resources)
    return Lake(defs, resources, root, DagsterInstance.ephemeral())


def _batches() -> list[sample_data.SampleData]:
    first = sample_data.generate(240, days=2, customers=8, products=5, id_prefix="a-")
    second = sample_data.generate(
        60, days=2, customers=8, products=5, id_prefix="b-", seed=11, include_dimensions=False
    )
    return [first, second]


def _build(
    lake: Lake, client: KafkaClientConfig, prefix: str, batches: list[Any], *, ingest_each: bool = True
) -> list[int]:
    """Produce and ingest each batch (or all, then one ingest), then build every day once; returns
    bronze/orders' version after each ingest (an older one is what an as-of replay reads)."""
    versions: list[int] = []
    days: set[str] = set()
    for i, data in enumerate(batches):
        sample_data.produce(client, data, prefix=prefix)
        if not ingest_each and i < len(batches) - 1:
            continue
        ingest = run_ingest(lake.defs, lake.instance)
        assert ingest.result.success
        versions.append(table_version(lake.uri("bronze/orders")))
        days |= set(ingest.affected_days)
    for result in run_daily(lake.defs, sorted(days), lake.instance):
        assert result.success
    return versions


def _rows(uri: str, version: int | None = None) -> list[tuple[Any, ...]]:
    """Every row without the bookkeeping columns (``_ingest_time``, Kafka positions, run ids)."""
    table = read_arrow(uri, version=version) if version is not None else read_arrow(uri)
    columns = sorted(c for c in table.column_names if not c.startswith("_") and c != "run_id")
    return sorted(tuple(row[c] for c in columns) for row in table.select(columns).to_pylist())


def _order_ids(uri: str, version: int | None = None) -> set[str]:
    table = read_arrow(uri, version=version) if version is not None else read_arrow(uri)
    return set(table.column("order_id").to_pylist())


def _versions(lake: Lake, tables: list[str]) -> dict[str, int]:
    return {t: table_version(lake.uri(t)) for t in tables}


@pytest.fixture(scope="module")
def built(kafka_broker, spark, tmp_path_factory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("replay") / "lake"
    prefix = f"rpa{uuid.uuid4().hex[:8]}."  # fresh topics even on a long-lived external cluster
    lake = _lake(kafka_broker, root, prefix)
    bronze_versions = _build(lake, kafka_broker, prefix, _batches())
    return {"lake": lake, "bronze_versions": bronze_versions, "tmp": root.parent}


def _files(root: Path) -> dict[str, float]:
    return {str(p): p.stat().st_mtime for p in root.rglob("*") if p.is_file()}


def test_dry_run_prints_the_plan_and_writes_nothing(built, monkeypatch, capsys):
    from orchestration.cli.main import cli

    lake: Lake = built["lake"]
    monkeypatch.setenv("STREAMHOUSE_LAKE_ROOT", str(lake.root))
    before = _files(lake.root)
    result = CliRunner().invoke(
        cli, ["replay", "lake", "silver.orders", "--dry-run", "--format", "json"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    assert plan["dry_run"] is True and plan["source"] == "latest inputs"
    assert {row["table"] for row in plan["tables"]} == SILVER_ORDERS_REPLAY
    assert sample_data.DEFAULT_START.date().isoformat() in plan["days"]
    whys = {row["table"]: row["why"] for row in plan["tables"]}
    assert whys["silver/orders"] == "chosen" and whys["gold/revenue_hopping_10m"] == "downstream"
    table = CliRunner().invoke(cli, ["replay", "lake", "silver/orders", "--dry-run"], catch_exceptions=False)
    assert "dry run, nothing written" in table.stdout and "gold/revenue_tumbling_5m" in table.stdout
    assert _files(lake.root) == before

    # Mistakes are one-line errors (exit 2 through the console script's main).
    from orchestration.cli.main import main

    for args, message in [
        (["bronze/orders"], "is the source of a replay"),
        (["silver/order"], "did you mean silver/orders"),
        (["gold/orders_enriched", "--as-of-version", "0"], "--as-of-version is ambiguous"),
        (["silver/orders", "--from", "2026-01-05", "--to", "2026-01-01"], "is after --to"),
        (["silver/orders", "--as-of-version", "999"], "has versions 0.."),
    ]:
        with pytest.raises(SystemExit) as exit_info:
            main(["replay", "lake", *args, "--dry-run"])
        assert exit_info.value.code == 2, args
        err = capsys.readouterr().err
        assert err.startswith("error: ") and message in err, (args, err)
    assert _files(lake.root) == before


def test_replay_as_of_an_older_bronze_version_then_from_the_latest(built):
    from orchestration.replay.lake import ReplayError, plan_lake_replay, run_lake_replay

    lake: Lake = built["lake"]
    first_bronze, _ = built["bronze_versions"]
    silver = lake.uri("silver/orders")
    everything = _order_ids(silver)
    assert any(i.startswith("b-") for i in everything)
    before = _versions(lake, sorted(SILVER_ORDERS_REPLAY))

    # A time resolves to the version current then: between the first ingest's commit and the next.
    commits = {e["version"]: e["timestamp"] for e in history(lake.uri("bronze/orders"))}
    at = datetime.fromtimestamp((commits[first_bronze] + commits[first_bronze + 1]) / 2000, UTC)
    plan = plan_lake_replay(lake.defs, str(lake.root), ["silver/orders"], as_of_timestamp=at)
    assert plan.source == f"bronze/orders@{first_bronze}"
    with pytest.raises(ReplayError, match="has no version as of"):
        plan_lake_replay(lake.defs, str(lake.root), ["silver/orders"], as_of_timestamp=at.replace(year=2000))

    plan = plan_lake_replay(lake.defs, str(lake.root), ["silver/orders"], as_of_version=first_bronze)
    assert plan.source == f"bronze/orders@{first_bronze}"
    pins = {s.op: s.pins for s in plan.steps}
    assert pins["silver_orders"] == {"bronze/orders": first_bronze}
    assert all(not p for op, p in pins.items() if op != "silver_orders")  # downstream reads the replay
    result = run_lake_replay(
        plan, lake.defs, resources=lake.resources, lake_root=str(lake.root), instance=lake.instance
    )
    after = _versions(lake, sorted(SILVER_ORDERS_REPLAY))
    assert all(after[t] > before[t] for t in ["silver/orders", *GOLD]), (before, after)
    assert result.materializations["silver/orders"]["input_versions"] == {"bronze/orders": first_bronze}
    rows = {r[0]: r[4] for r in plan.rows()}
    assert rows["silver/orders"] == f"v{before['silver/orders']} → v{after['silver/orders']}"

    # Silver now holds exactly what the first bronze version held; the old version is still there.
    replayed = _order_ids(silver)
    assert replayed and all(i.startswith("a-") for i in replayed)
    assert _order_ids(silver, before["silver/orders"]) == everything
    # Gold follows silver: tumbling counts the replayed orders only.
    tumbling = read_arrow(lake.uri("gold/revenue_tumbling_5m"))
    assert sum(tumbling.column("orders").to_pylist()) == len(replayed)

    # Replaying from the latest bronze brings the second batch back.
    plan = plan_lake_replay(lake.defs, str(lake.root), ["silver/orders"])
    run_lake_replay(
        plan, lake.defs, resources=lake.resources, lake_root=str(lake.root), instance=lake.instance
    )
    assert _order_ids(silver) == everything
    assert _rows(silver) == _rows(silver, before["silver/orders"])
    for table in GOLD:
        assert _rows(lake.uri(table)) == _rows(lake.uri(table), before[table]), table


def test_replay_after_a_logic_change_equals_a_fresh_build(built, kafka_broker, monkeypatch):
    """Silver drops large orders under the new logic: the replay (through ``replay_job``) of silver/orders
    and everything downstream must equal a lake built from scratch with that logic."""
    import assets.silver.write as silver_write

    original = silver_write.apply_changes

    def changed(df: Any, spec: Any) -> Any:
        out = original(df, spec)
        return out.where("quantity <= 2") if "quantity" in out.columns else out

    lake: Lake = built["lake"]
    before = _versions(lake, sorted(SILVER_ORDERS_REPLAY))
    old_rows = {t: _rows(lake.uri(t)) for t in ["silver/orders", *GOLD]}
    monkeypatch.setattr(silver_write, "apply_changes", changed)

    result = lake.defs.resolve_job_def("replay_job").execute_in_process(
        run_config={"ops": {"replay_lake": {"config": {"tables": ["silver/orders"]}}}},
        instance=lake.instance,
    )
    assert result.success
    output = result.output_for_node("replay_lake")
    assert set(output) == SILVER_ORDERS_REPLAY
    assert output["silver/orders"]["before"] == before["silver/orders"]
    assert output["silver/orders"]["after"] > before["silver/orders"]

    prefix = f"rpb{uuid.uuid4().hex[:8]}."
    fresh = _lake(kafka_broker, built["tmp"] / "fresh", prefix)
    _build(fresh, kafka_broker, prefix, _batches(), ingest_each=False)
    for table in ["silver/orders", *GOLD]:
        replayed = _rows(lake.uri(table))
        assert replayed == _rows(fresh.uri(table)), table
        assert replayed != old_rows[table], f"{table} did not change under the new logic"
    quantities = read_arrow(lake.uri("silver/orders"), columns=["quantity"]).column("quantity").to_pylist()
    assert quantities and max(quantities) <= 2
    # The pre-replay versions are still readable by time travel.
    for table in ["silver/orders", *GOLD]:
        assert _rows(lake.uri(table), before[table]) == old_rows[table]
    mats = materializations(result)
    assert mats == {}  # the job's own run materializes nothing; the rebuild runs are its children
