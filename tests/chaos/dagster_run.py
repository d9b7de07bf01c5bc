"""One lakehouse pass (ingest job: Kafka → bronze + silver dimensions; daily job: silver events → gold)
in a process of its own, with its own local Spark session, that can SIGKILL itself at a chosen commit.

``tests/chaos/test_dagster_kill.py`` runs it as a subprocess (a kill -9 needs a process to kill)::

    python -m tests.chaos.dagster_run --bootstrap-servers HOST:PORT --profile real \\
        --topic-prefix P --lake DIR --state-dir DIR --days 2026-01-05,2026-01-06 \\
        [--kill-at before:/silver/orders:1]

``--kill-at PHASE:TABLE:N`` arms the kill: at the ``N``-th Delta commit (``assets.delta.writer``'s commit
step, which bronze's Arrow writer and the Spark writer share; and native Delta writes) of a table whose
URI contains ``TABLE``, the process kills itself ``before`` the commit (its Parquet files are already
published into the table directory, the log entry not written) or ``after`` it (the commit is in the
log, Dagster never hears of it). Just before dying it writes the kill point to ``<state-dir>/killed``,
so the test knows the kill happened where it was meant to, not somewhere else.

Without ``--kill-at`` the pass runs to completion and prints one JSON line: the materialized assets.
The jobs run without their asset checks (:func:`run_pass`).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: a small local session: the trial's data is a few hundred records
SPARK_CONF = {
    "spark.driver.memory": "1g",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.sql.codegen.wholeStage": "false",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
}


@dataclass(frozen=True)
class KillPoint:
    phase: str  # "before" | "after"
    table: str
    nth: int

    @classmethod
    def parse(cls, text: str) -> KillPoint:
        phase, table, nth = text.rsplit(":", 2) if text.count(":") >= 2 else ("", "", "")
        if phase not in ("before", "after") or not table or not nth.isdigit() or int(nth) < 1:
            raise SystemExit(f"--kill-at {text!r}: expected before|after:<table uri part>:<n >= 1>")
        return cls(phase, table, int(nth))

    def __str__(self) -> str:
        return f"{self.phase}:{self.table}:{self.nth}"


def install_kill(point: KillPoint, marker: Path) -> None:
    """Wrap the Delta layer's commit step so the process SIGKILLs itself at ``point``."""
    import assets.delta.writer as writer

    seen = 0

    def die() -> None:
        marker.write_text(str(point))
        sys.stdout.flush()
        sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(60)  # never reached: SIGKILL cannot be caught

    def hit(uri: str) -> bool:
        nonlocal seen
        if point.table not in uri:
            return False
        seen += 1
        return seen == point.nth

    def wrap(original: Any, uri_of: Any) -> Any:
        def commit(*args: Any, **kwargs: Any) -> Any:
            due = hit(uri_of(*args, **kwargs))
            if due and point.phase == "before":
                die()
            result = original(*args, **kwargs)
            if due:
                die()
            return result

        return commit

    # _commit(location, dt, plan, ...) and write_native(data, location, ...): both name the table
    writer._commit = wrap(writer._commit, lambda location, *a, **k: location.uri)
    writer.write_native = wrap(writer.write_native, lambda data, location, *a, **k: location.uri)


def _without_checks(defs: Any, name: str) -> Any:
    """The job ``name`` with its assets only: the asset checks write no table, so a kill inside one is
    no different from a kill between two commits, and leaving them out keeps the trial short."""
    job = defs.resolve_job_def(name)
    return job.get_subset(
        asset_selection=set(job.asset_layer.selected_asset_keys), asset_check_selection=set()
    )


def run_pass(defs: Any, instance: Any, days: list[str] | None) -> tuple[list[str], list[str]]:
    """The ingest job, then the daily job for ``days`` (None: the days the ingest run touched), as
    ``orchestration.pipeline.run_main_job`` runs them; returns (days, materialized asset keys)."""
    from orchestration.jobs import DAILY_JOB, INGEST_JOB
    from orchestration.partitions import affected_days, contiguous_ranges
    from orchestration.pipeline import QUIET_RUN_CONFIG, materializations
    from orchestration.runs import range_tags

    result = _without_checks(defs, INGEST_JOB).execute_in_process(
        instance=instance, run_config=QUIET_RUN_CONFIG
    )
    assert result.success, "the ingest run failed"
    mats = materializations(result)
    if days is None:
        days = affected_days(
            {
                k.split("/", 1)[1]: list(m.get("event_dates", []))
                for k, m in mats.items()
                if k.startswith("bronze/")
            }
        )
    done = sorted(mats)
    daily = _without_checks(defs, DAILY_JOB)
    for start, end in contiguous_ranges(days):
        result = daily.execute_in_process(
            instance=instance, tags=range_tags(start, end), run_config=QUIET_RUN_CONFIG
        )
        assert result.success, f"the daily run {start}..{end} failed"
        done += sorted(materializations(result))
    return days, done


def run(args: argparse.Namespace) -> dict[str, Any]:
    from dagster import DagsterInstance

    from edge.kafka import BrokerProfile
    from orchestration.definitions import build_definitions
    from orchestration.settings import Settings

    settings = Settings(
        broker_profile=BrokerProfile(args.profile),
        bootstrap_servers=args.bootstrap_servers,
        lake_root=Path(args.lake),
        state_dir=Path(args.state_dir),
        spark_master="local[2]",
        spark_conf=SPARK_CONF,
        delta_jars_available=False,
    )
    defs = build_definitions(
        settings, bootstrap_servers=args.bootstrap_servers, topic_prefix=args.topic_prefix
    )
    days, done = run_pass(defs, DagsterInstance.ephemeral(), [d for d in args.days.split(",") if d])
    return {"days": days, "materialized": done}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--bootstrap-servers", required=True)
    parser.add_argument("--profile", choices=["embedded", "real"], required=True)
    parser.add_argument("--topic-prefix", required=True)
    parser.add_argument("--lake", required=True)
    parser.add_argument("--state-dir", required=True)
    parser.add_argument("--days", required=True, help="comma-separated days of the daily run(s)")
    parser.add_argument("--kill-at", type=KillPoint.parse, default=None)
    args = parser.parse_args(argv)
    os.environ["TZ"] = "UTC"
    time.tzset()
    Path(args.state_dir).mkdir(parents=True, exist_ok=True)
    if args.kill_at is not None:
        install_kill(args.kill_at, Path(args.state_dir) / "killed")
    print(json.dumps(run(args)), flush=True)


if __name__ == "__main__":
    main()
