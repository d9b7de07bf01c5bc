"""Run one suite: measure it (``quality.engine``), then write its Data Docs page (``quality.gx``).

Shared by the Dagster asset checks (``quality.checks``) and ``streamhouse check``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from quality.engine import ARROW_MAX_ROWS, SAMPLE_ROWS, Batch, Outcome, measure
from quality.suites import Suite
from quality.verdict import ERROR, WARNING, worst


@dataclass
class SuiteRun:
    suite: Suite
    batch: Batch
    outcomes: list[Outcome]
    docs: Path | None
    seconds: float = 0.0
    #: of ``seconds``: measuring (queries) and Data Docs (GX results and rendering)
    measure_seconds: float = 0.0
    docs_seconds: float = 0.0

    @property
    def errors(self) -> list[Outcome]:
        """Failed ``fail`` expectations: they block what is downstream (one that could not be measured
        does not: it is a warning, see ``Outcome.compared``)."""
        return [o for o in self.outcomes if o.verdict == ERROR]

    @property
    def warnings(self) -> list[Outcome]:
        """Failed ``warn``/``drop`` expectations and those that could not be measured."""
        return [o for o in self.outcomes if o.verdict == WARNING]

    @property
    def verdict(self) -> str:
        """The table's verdict: its worst expectation's (``quality.verdict``)."""
        return worst(o.verdict for o in self.outcomes)


def parse_as_of(text: str | None) -> datetime | None:
    """The reference time of freshness expectations (ISO-8601; naive means UTC). Empty: now."""
    if not text:
        return None
    value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


def run_suite(
    suite: Suite,
    lake_root: str,
    *,
    days: Sequence[date] | None = None,
    spark: Callable[[], Any] | None = None,
    as_of: datetime | None = None,
    docs_dir: Path | None = None,
    run_name: str = "manual",
    sample_rows: int = SAMPLE_ROWS,
    arrow_max_rows: int = ARROW_MAX_ROWS,
    build_index: bool = True,
) -> SuiteRun:
    """Measure ``suite`` and render its Data Docs page (with the index unless ``build_index=False``:
    callers validating many suites build the index once, ``quality.gx.build_index``)."""
    import time

    started = time.perf_counter()
    batch, outcomes = measure(
        suite,
        lake_root,
        days=days,
        spark=spark,
        as_of=as_of,
        sample_rows=sample_rows,
        arrow_max_rows=arrow_max_rows,
    )
    measured = time.perf_counter()
    docs = None
    if docs_dir is not None:
        from quality.gx import data_docs

        docs = data_docs(suite, batch, outcomes, docs_dir, run_name, build_index=build_index)
    done = time.perf_counter()
    return SuiteRun(suite, batch, outcomes, docs, done - started, measured - started, done - measured)
