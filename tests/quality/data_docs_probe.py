"""A real validation for the Data Docs tests: a small Delta table measured by the engine, twice.

``gold.dd_probe`` (DuckDB over Delta, no broker and no Spark) is checked once clean and once after a
row with ``qty = 0`` was appended, so the two runs differ: the first passes both expectations, the
second passes ``id_not_null`` and fails ``qty_positive``. Shared by ``tests/quality/test_data_docs.py``
and the browser test ``tests/ui/test_data_docs_ui.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

PASSING = "id_not_null"
FAILING = "qty_positive"
CLEAN_RUN = "probe-clean"
DIRTY_RUN = "probe-dirty"
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


def probe_suite():  # type: ignore[no-untyped-def]
    from quality.suites import ARROW, Suite, between, not_null

    return Suite(
        TABLE,
        ARROW,
        None,
        (not_null("id"), between(FAILING, "qty", low=1)),
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
    write_deltalake(str(uri), pa.table({"id": [1, 2, 3], "qty": [1, 2, 3]}))
    for run_name, extra in ((CLEAN_RUN, None), (DIRTY_RUN, {"id": [4], "qty": [0]})):
        if extra is not None:
            write_deltalake(str(uri), pa.table(extra), mode="append")
        run = run_suite(suite, str(lake), docs_dir=docs_dir, run_name=run_name, build_index=False)
        assert run.docs is not None
        pages[run_name] = run.docs
        success[run_name] = all(o.success for o in run.outcomes)
    assert success == {CLEAN_RUN: True, DIRTY_RUN: False}
    return ProbeDocs(docs_dir, build_index(docs_dir), pages, success)
