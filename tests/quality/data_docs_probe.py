"""A real validation for the Data Docs tests: a small Delta table measured by the engine, twice.

``gold.dd_probe`` (DuckDB over Delta, no broker and no Spark) is checked three times, one verdict each
(``quality.verdict``): clean (every expectation passes: passed), after a row with ``qty = 500`` was
appended (only the ``warn`` expectation ``qty_at_most_100`` does not hold: warning), and after a row with
``qty = 0`` too (the ``fail`` expectation ``qty_positive`` does not hold: error). Shared by
``tests/quality/test_data_docs.py`` and the browser test ``tests/ui/test_data_docs_ui.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

PASSING = "id_not_null"
FAILING = "qty_positive"
#: a ``warn`` expectation: not holding, it is a warning
WARNING = "qty_at_most_100"
CLEAN_RUN = "probe-clean"
WARNING_RUN = "probe-warning"
DIRTY_RUN = "probe-dirty"
#: each run's verdict, and each expectation's in each run
VERDICTS = {CLEAN_RUN: "passed", WARNING_RUN: "warning", DIRTY_RUN: "error"}
EXPECTATION_VERDICTS = {
    CLEAN_RUN: {PASSING: "passed", FAILING: "passed", WARNING: "passed"},
    WARNING_RUN: {PASSING: "passed", FAILING: "passed", WARNING: "warning"},
    DIRTY_RUN: {PASSING: "passed", FAILING: "error", WARNING: "warning"},
}
TABLE = "gold.dd_probe"
ASSET = "gold/dd_probe"


@dataclass
class ProbeDocs:
    docs_dir: Path
    index: Path
    #: run name -> its validation page
    pages: dict[str, Path]
    #: run name -> whether the run's suite passed
    success: dict[str, bool]
    #: run name -> the run's verdict
    verdicts: dict[str, str]


def probe_suite():  # type: ignore[no-untyped-def]
    from quality.suites import ARROW, WARN, Suite, between, not_null

    return Suite(
        TABLE,
        ARROW,
        None,
        (not_null("id"), between(FAILING, "qty", low=1), between(WARNING, "qty", high=100, action=WARN)),
        description="Data Docs probe",
    )


def build_probe_docs(lake: Path, docs_dir: Path) -> ProbeDocs:
    """Write the table, validate it clean then dirty, render the pages and the index (as
    ``streamhouse check`` does: pages first, the index once)."""
    import pyarrow as pa
    from deltalake import write_deltalake

    from quality.gx import build_index
    from quality.runner import run_suite

    uri = lake / "gold" / "dd_probe"
    suite = probe_suite()
    pages: dict[str, Path] = {}
    success: dict[str, bool] = {}
    verdicts: dict[str, str] = {}
    write_deltalake(str(uri), pa.table({"id": [1, 2, 3], "qty": [1, 2, 3]}))
    runs = ((CLEAN_RUN, None), (WARNING_RUN, {"id": [4], "qty": [500]}), (DIRTY_RUN, {"id": [5], "qty": [0]}))
    for run_name, extra in runs:
        if extra is not None:
            write_deltalake(str(uri), pa.table(extra), mode="append")
        run = run_suite(suite, str(lake), docs_dir=docs_dir, run_name=run_name, build_index=False)
        assert run.docs is not None
        pages[run_name] = run.docs
        success[run_name] = all(o.success for o in run.outcomes)
        verdicts[run_name] = run.verdict
        assert {o.expectation.name: o.verdict for o in run.outcomes} == EXPECTATION_VERDICTS[run_name]
    assert verdicts == VERDICTS
    return ProbeDocs(docs_dir, build_index(docs_dir), pages, success, verdicts)
