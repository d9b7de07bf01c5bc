"""What the Dagster instance knows about a lake table: the checks guarding it and the run behind
each commit.

``streamhouse describe`` shows them next to what the Delta log says. They are looked up lazily, and
every failure (no instance yet, an unreadable one, suites that do not load) yields "unknown" rather
than an error: describing a table must work without Dagster ever having run.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any


def asset_checks(table: str) -> list[dict[str, Any]] | None:
    """The Dagster asset checks defined for the table's asset and their last result (None when the
    suites cannot be loaded).

    The checks are the table's expectation suite (``quality.checks`` makes one check per expectation,
    and no other asset checks exist), read from ``quality.suites``: loading the whole code location
    (``orchestration.definitions``: every asset, Spark, the resources) to list them made ``describe``
    take 7-9.5 s. Dagster itself is imported only when its instance exists, for the last results."""
    try:
        from quality.suites import SUITES
    except Exception:  # describing a table must not depend on the quality suites loading
        return None
    suite = next((s for s in SUITES.values() if s.table == table), None)
    if suite is None:
        return []
    instance = _instance()
    out = []
    for name in sorted(e.name for e in suite.expectations):
        last: dict[str, Any] = {"status": "never run"}
        if instance is not None:
            try:
                from dagster import AssetCheckKey, AssetKey

                check = AssetCheckKey(AssetKey(suite.asset_key_path), name)
                records = instance.event_log_storage.get_asset_check_execution_history(check, limit=1)
                if records:
                    last = _last_result(records[0])
            except Exception:
                pass
        out.append({"name": name, **last})
    return out


def _last_result(rec: Any) -> dict[str, Any]:
    """A check execution as ``describe`` shows it: the verdict (``quality.verdict``: a not-passed
    evaluation of severity WARN is a warning, not a failure), Dagster's own status and severity, the
    description the check gave (what it observed), the run and the time."""
    from quality.verdict import from_dagster

    evaluation = rec.evaluation
    severity = evaluation.severity.value if evaluation is not None else None
    dagster_status = str(rec.status.value)
    return {
        "status": from_dagster(dagster_status, severity),
        "dagster_status": dagster_status,
        "severity": severity,
        "description": evaluation.description if evaluation is not None else None,
        "run_id": rec.run_id,
        "time": _when_ts(rec.create_timestamp),
    }


def _when_ts(ts: float | None) -> str | None:
    from datetime import UTC

    return datetime.fromtimestamp(ts, tz=UTC).isoformat() if ts else None


def _instance() -> Any:
    """The Dagster instance at the settings' dagster_home, if one was ever created there."""
    from orchestration.settings import load_settings

    home = Path(load_settings().dagster_home)
    if not home.is_dir():
        return None
    try:
        from dagster import DagsterInstance

        return DagsterInstance.from_config(str(home))
    except Exception:
        return None


def run_ids(table: str, limit: int = 1000) -> dict[int, str]:
    """Delta version -> the Dagster run that materialized it, from the instance's materializations."""
    instance = _instance()
    if instance is None:
        return {}
    try:
        from dagster import AssetKey

        records = instance.fetch_materializations(AssetKey(table.split(".")), limit=limit).records
    except Exception:
        return {}
    out: dict[int, str] = {}
    for record in records:
        mat = record.asset_materialization
        meta = mat.metadata if mat is not None else {}
        version = meta.get("delta_version")
        value = getattr(version, "value", version)
        if isinstance(value, int) and value not in out and not _skipped(meta):
            out[value] = record.run_id
    return out


def _skipped(meta: Mapping[str, Any]) -> bool:
    flag = meta.get("commit_skipped")
    return bool(getattr(flag, "value", flag))
