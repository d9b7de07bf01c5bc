"""The daily job on a Spark standalone cluster (a master and two workers, separate JVMs) makes the same
tables as on ``local[*]``: only ``spark.master`` differs (``STREAMHOUSE_SPARK_MASTER``).

Bronze is ingested once in this process (the suite's broker and shared local session) and copied; the
daily job runs on the original in this process (``local[*]``) and on the copy in a process of its own (a
fresh driver: one SparkContext per process) against ``spark://127.0.0.1:PORT``, with every table written by
Spark's writers, so the executors write the lake's files themselves. Every silver, quarantine and gold
table is then read back through DuckDB (``assets.lake.sql``) and compared row for row.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from assets import sample_data
from assets.lake import sql
from assets.lake.catalog import list_tables
from assets.spark.standalone import SparkStandaloneCluster
from edge.kafka import KafkaClientConfig
from orchestration.pipeline import QUIET_RUN_CONFIG, run_daily, run_ingest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow, pytest.mark.spark, pytest.mark.broker, pytest.mark.timeout(1500)]


def _daily(
    lake: Path,
    days: list[str],
    master: str,
    workdir: Path,
    client: KafkaClientConfig,
    spark_conf: dict[str, str],
) -> dict[str, Any]:
    workdir.mkdir(parents=True, exist_ok=True)
    config = workdir / "streamhouse.yaml"
    config.write_text(yaml.safe_dump({"spark_conf": spark_conf}))
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "STREAMHOUSE_CONFIG": str(config),
        "STREAMHOUSE_LAKE_ROOT": str(lake),
        "STREAMHOUSE_STATE_DIR": str(workdir / "state"),
        "STREAMHOUSE_SPARK_MASTER": master,
        "STREAMHOUSE_BOOTSTRAP_SERVERS": client.bootstrap_servers,
        "STREAMHOUSE_BROKER_PROFILE": client.profile.value,
        "SPARK_LOCAL_IP": "127.0.0.1",
    }
    proc = subprocess.run(
        [sys.executable, "-m", "tests.lakehouse.daily_run", *days, "--spark-writes"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["success"] and result["master"] == master, result
    return result


def _rows(lake: Path, name: str) -> list[str]:
    """Every row of a table, sorted, without ``run_id`` (which run wrote a quarantine row)."""
    frame = sql(f"SELECT * FROM {name}", lake_root=lake)
    frame = frame.drop(columns=[c for c in ("run_id",) if c in frame.columns])
    return sorted(map(str, frame.to_dict("records")))


def test_daily_job_on_a_standalone_cluster_equals_local(lakehouse, tmp_path: Path, record_property) -> None:  # type: ignore[no-untyped-def]
    lh = lakehouse()
    data = sample_data.generate(
        1500,
        days=1,
        customers=40,
        include_dimensions=True,
        id_prefix="sc-",
        invalid_ratio=0.02,
        late_ratio=0.05,
    )
    sample_data.produce(lh.client, data, prefix=lh.prefix)
    days = run_ingest(lh.defs, lh.instance).affected_days
    assert days
    local_lake, cluster_lake = Path(lh.lake), tmp_path / "lake-cluster"
    shutil.copytree(lh.lake, cluster_lake)

    # local[*]: the suite's own session, in this process (the comparison is of tables, not of times)
    started = time.perf_counter()
    assert all(r.success for r in run_daily(lh.defs, days, lh.instance, run_config=QUIET_RUN_CONFIG))
    local = {"seconds": round(time.perf_counter() - started, 2)}
    with SparkStandaloneCluster(
        workers=2, worker_cores=1, worker_memory="1g", work_dir=tmp_path / "spark"
    ) as sc:
        conf = {
            "spark.executor.memory": "768m",
            "spark.executor.cores": "1",
            "spark.cores.max": "2",
            "spark.sql.shuffle.partitions": "8",
            "spark.driver.host": "127.0.0.1",
            # the executors' Python workers import the project's modules (pickled functions name them)
            "spark.executorEnv.PYTHONPATH": str(ROOT),
        }
        cluster = _daily(cluster_lake, days, sc.master_url, tmp_path / "cluster", lh.client, conf)
        apps = (sc.status() or {}).get("completedapps", []) + (sc.status() or {}).get("activeapps", [])
        assert apps, "no application ran on the standalone master"
        executor_dirs = list((tmp_path / "spark").glob("worker-*/app-*/*"))
        assert {p.parts[-3] for p in executor_dirs} == {"worker-1", "worker-2"}, executor_dirs
    record_property("spark_cluster_start_s", round(sc.start_seconds, 1))
    record_property("daily_local_s", local["seconds"])
    record_property("daily_cluster_s", cluster["seconds"])
    print(
        f"cluster start {sc.start_seconds:.1f}s, daily local[*] {local['seconds']}s, "
        f"cluster {cluster['seconds']}s"
    )

    names, cluster_names = (
        sorted(t.name for t in list_tables(lake) if t.layer in ("silver", "quarantine", "gold"))
        for lake in (local_lake, cluster_lake)
    )
    assert names == cluster_names and any(n.startswith("gold.") for n in names), (names, cluster_names)
    for name in names:
        local_rows, cluster_rows = _rows(local_lake, name), _rows(cluster_lake, name)
        assert local_rows == cluster_rows, (
            f"{name}: {len(local_rows)} rows on local[*], {len(cluster_rows)} on the cluster"
        )
