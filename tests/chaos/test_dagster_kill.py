"""A lakehouse run killed with SIGKILL mid-commit, then retried, ends with an uninterrupted run's tables.

The pass (ingest job: Kafka → bronze and the silver dimensions; daily job: silver events,
quarantine and gold) runs in a process of its own (``tests/chaos/dagster_run.py``, its own local Spark)
that kills itself at one Delta commit: during a bronze commit (files published, log entry not
written), between a silver table's write and its commit, and right after a gold table's commit (the
other gold tables not written yet). The retry is the same pass again, for the same days, as a Dagster
retry of the failed run would be (both jobs without their asset checks, which write no table). Then
every table -- bronze, silver, quarantine, gold -- must load with deltalake and hold the same rows as
the tables of a run that was never interrupted (columns that name the run or the moment of ingestion
aside). A killed lake must load too, before its retry.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from edge.kafka import KafkaClientConfig
from tests.chaos.conftest import Scale
from tests.chaos.dagster_run import run_pass

pytestmark = [pytest.mark.slow, pytest.mark.broker, pytest.mark.spark, pytest.mark.timeout(1200)]

ROOT = Path(__file__).resolve().parents[2]
#: where the runner kills itself (``PHASE:TABLE:N``, see tests/chaos/dagster_run.py)
KILL_POINTS: Mapping[str, list[str]] = {
    # CI: the two kills only a Dagster retry can repair (a silver write without its commit; gold half
    # written); a bronze commit killed midway is also tested in-process by tests/lakehouse (each killed
    # run here costs a Spark driver of its own, about a minute)
    "ci": ["before:/silver/orders:1", "after:/gold/:1"],
    "full": [
        "after:/bronze/:1",
        "before:/bronze/:2",
        "before:/silver/customers:1",
        "before:/silver/orders:1",
        "before:/quarantine/orders:1",
        "after:/silver/clicks:1",
        "after:/gold/:1",
        "before:/gold/:3",
    ],
}
EVENTS = {"ci": 300, "full": 4_000}
#: columns that differ between any two runs by design: when a record was ingested, which run did it
VOLATILE = {"ingest_time", "_ingest_time", "run_id"}


def _settings(client: KafkaClientConfig, lake: Path, state_dir: Path) -> Any:
    from orchestration.settings import Settings

    return Settings(
        broker_profile=client.profile,
        bootstrap_servers=client.bootstrap_servers,
        lake_root=lake,
        state_dir=state_dir,
    )


def _run_in_process(
    client: KafkaClientConfig, prefix: str, lake: Path, state_dir: Path, days: list[str] | None
) -> list[str]:
    """The runner's pass, in this process on the suite's Spark session; returns the days it covered."""
    from dagster import DagsterInstance

    from orchestration.definitions import build_definitions
    from orchestration.resources import ExistingSparkResource

    defs = build_definitions(
        _settings(client, lake, state_dir),
        bootstrap_servers=client.bootstrap_servers,
        topic_prefix=prefix,
        spark=ExistingSparkResource(),
    )
    days, _ = run_pass(defs, DagsterInstance.ephemeral(), days)
    assert days, "the sample data produced no event days"
    return days


def _run_killed(
    client: KafkaClientConfig, prefix: str, lake: Path, state_dir: Path, days: list[str], point: str
) -> float:
    """Start the runner armed with ``point``; wait for its SIGKILL; returns the seconds it ran."""
    cmd = [
        sys.executable,
        "-m",
        "tests.chaos.dagster_run",
        "--bootstrap-servers",
        client.bootstrap_servers,
        "--profile",
        client.profile.value,
        "--topic-prefix",
        prefix,
        "--lake",
        str(lake),
        "--state-dir",
        str(state_dir),
        "--days",
        ",".join(days),
        "--kill-at",
        point,
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TZ": "UTC"}
    log_path = state_dir.parent / f"{state_dir.name}.log"
    state_dir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with open(log_path, "wb") as log:
        # its own session: the runner's Spark JVM is in its process group, cleaned up below
        proc = subprocess.Popen(
            cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            code = proc.wait(600)
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # the JVM the killed driver leaves behind
            except ProcessLookupError:
                pass
    tail = "\n".join(log_path.read_text(errors="replace").splitlines()[-30:])
    assert code == -signal.SIGKILL, f"runner exited with {code}, not killed at {point}:\n{tail}"
    killed = state_dir / "killed"
    assert killed.exists() and killed.read_text() == point, f"killed elsewhere than {point}:\n{tail}"
    return time.monotonic() - started


def _tables(lake: Path) -> dict[str, Counter[str]]:
    """Every Delta table of the lake, loaded with deltalake: ``layer/name`` -> its rows (a multiset of
    canonical JSON rows, without the :data:`VOLATILE` columns)."""
    from deltalake import DeltaTable

    out: dict[str, Counter[str]] = {}
    for log_dir in sorted(lake.glob("*/*/_delta_log")):
        table = log_dir.parent
        name = f"{table.parent.name}/{table.name}"
        dt = DeltaTable(str(table))
        rows = dt.to_pyarrow_table().to_pylist()
        out[name] = Counter(
            json.dumps({k: v for k, v in row.items() if k not in VOLATILE}, sort_keys=True, default=str)
            for row in rows
        )
    return out


def _differences(got: dict[str, Counter[str]], want: dict[str, Counter[str]]) -> list[str]:
    problems = []
    for name in sorted(set(got) | set(want)):
        if name not in got:
            problems.append(f"{name}: missing")
            continue
        if name not in want:
            problems.append(f"{name}: not in the uninterrupted run")
            continue
        extra, lost = got[name] - want[name], want[name] - got[name]
        if extra or lost:
            problems.append(
                f"{name}: {sum(extra.values())} row(s) too many (e.g. {next(iter(extra), None)}), "
                f"{sum(lost.values())} missing (e.g. {next(iter(lost), None)})"
            )
    return problems


def test_killed_runs_retry_to_the_tables_of_an_uninterrupted_run(
    kafka_broker: KafkaClientConfig, spark, tmp_path: Path, scale: Scale, record_figures
) -> None:
    from assets import sample_data

    prefix = f"dk{uuid.uuid4().hex[:8]}."
    # two days of events (late ones reach back into a third): a daily run covers a few partitions
    data = sample_data.generate(
        EVENTS[scale.name], seed=16, days=2, invalid_ratio=0.03, duplicate_ratio=0.03, late_ratio=0.05
    )
    sample_data.produce(kafka_broker, data, prefix=prefix)
    started = time.monotonic()
    days = _run_in_process(kafka_broker, prefix, tmp_path / "lake-ref", tmp_path / "state-ref", None)
    reference = _tables(tmp_path / "lake-ref")
    layers = {name.split("/", 1)[0] for name in reference}
    assert {"bronze", "silver", "quarantine", "gold"} <= layers, sorted(reference)
    assert all(sum(rows.values()) for name, rows in reference.items() if name.startswith("bronze/"))
    for i, point in enumerate(KILL_POINTS[scale.name]):
        lake, state = tmp_path / f"lake-{i}", tmp_path / f"state-{i}"
        t0 = time.monotonic()
        killed_after = _run_killed(kafka_broker, prefix, lake, state, days, point)
        _tables(lake)  # whatever the kill left must load
        _run_in_process(kafka_broker, prefix, lake, state, days)  # the retry
        problems = _differences(_tables(lake), reference)
        record_figures(
            kill_at=point,
            events=EVENTS[scale.name],
            days=len(days),
            tables=len(reference),
            killed_after_s=round(killed_after, 1),
            kill_and_retry_s=round(time.monotonic() - t0, 1),
            tables_differing=len(problems),
        )
        assert not problems, f"killed at {point}, retried: tables differ\n" + "\n".join(problems)
    record_figures(kill_at="(whole trial)", seconds=round(time.monotonic() - started, 1))
