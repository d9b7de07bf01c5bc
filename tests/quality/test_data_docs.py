"""Data Docs as a user opens them: built from a real validation (a Delta table measured by the engine,
clean, then with a row only a ``warn`` expectation rejects, then with one a ``fail`` expectation
rejects), the index lists every run with its suite, asset, time and verdict; no page loads CSS or JS
from the network (the assets are served from beside the site); and each expectation's status on a
validation page is the verdict it had: passed (green check), warning (yellow sign), error (red cross).
Issue 46 item 4: a validation whose only unmet expectations are warnings was a red "Failed"."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.quality.data_docs_probe import (
    ASSET,
    CLEAN_RUN,
    DIRTY_RUN,
    EXPECTATION_VERDICTS,
    TABLE,
    VERDICTS,
    WARNING_RUN,
    ProbeDocs,
    build_probe_docs,
    probe_suite,
)

#: the status icon of each verdict (font-awesome classes, Bootstrap colours)
ICONS = {
    "passed": "fa-check-circle text-success",
    "warning": "fa-exclamation-triangle text-warning",
    "error": "fa-times text-danger",
}
LABELS = {"passed": "Passed", "warning": "Warning", "error": "Error"}

#: a stylesheet, a script or an image the browser fetches when the page opens
FETCHED = re.compile(r"<(?:link|script|img)\b[^>]*?\b(?:href|src)=\"([^\"]+)\"", re.S)


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory) -> ProbeDocs:
    root = tmp_path_factory.mktemp("data-docs")
    return build_probe_docs(root / "lake", root / "state" / "quality")


def _validation_rows(index: Path) -> list[dict]:
    """The rows of the index's validation table (bootstrap-table data, a Python literal in the page)."""
    html = index.read_text()
    rows = []
    for data in re.findall(r"data: (\[.*?\]),\s*toolbar:", html, re.S):
        rows += [r for r in ast.literal_eval(data) if "validations/" in r.get("_table_row_link_path", "")]
    return rows


def _row_of(html: str, expectation: str) -> str:
    """The validation page's table row of one expectation (its status cell and its description)."""
    rows = [tr for tr in re.split(r"<tr\b", html) if f"{expectation}:" in tr]
    assert len(rows) == 1, f"{expectation}: {len(rows)} rows"
    return rows[0]


def test_index_lists_every_validation_with_suite_asset_time_and_status(probe: ProbeDocs) -> None:
    rows = {r["run_name"]: r for r in _validation_rows(probe.index)}
    assert set(rows) == {CLEAN_RUN, WARNING_RUN, DIRTY_RUN}
    site = probe.index.parent
    for run, row in rows.items():
        assert row["_expectation_suite_name_sort"] == TABLE
        assert row["asset_name"] == ASSET  # the Dagster asset key
        assert row["run_time"] and row["_run_time_sort"]
        verdict = VERDICTS[run]
        assert row["_validation_success_text"] == LABELS[verdict]  # also what the status filter offers
        cell = str(row["validation_success"])
        assert ICONS[verdict] in cell, (run, cell)
        assert not any(icon in cell for v, icon in ICONS.items() if v != verdict), (run, cell)
        assert (site / row["_table_row_link_path"]).resolve() == probe.pages[run].resolve()


def test_pages_load_no_css_or_js_from_the_network(probe: ProbeDocs) -> None:
    suite_page = probe.index.parent / "expectations" / "gold" / "dd_probe.html"
    for page in [probe.index, suite_page, *probe.pages.values()]:
        html = page.read_text()
        fetched = FETCHED.findall(html)
        assert fetched, page
        remote = [u for u in fetched if re.match(r"(?:https?:)?//", u)]
        assert remote == [], f"{page.name} fetches {remote}"
        # every local asset is there, next to the site
        missing = [u for u in fetched if not (page.parent / u.split("?")[0]).is_file()]
        assert missing == [], f"{page.name} references missing {missing}"
    # font-awesome's fonts (the status icons) are served too
    css = next(u for u in FETCHED.findall(probe.index.read_text()) if u.endswith("all.min.css"))
    fonts = re.findall(r"url\(([^)]+\.woff2)\)", (probe.index.parent / css).read_text())
    assert fonts and all(((probe.index.parent / css).parent / f).is_file() for f in fonts)


def test_each_expectation_shows_the_verdict_it_had(probe: ProbeDocs) -> None:
    for run, page in probe.pages.items():
        html = page.read_text()
        for name, verdict in EXPECTATION_VERDICTS[run].items():
            row = _row_of(html, name)
            for v, icon in ICONS.items():
                assert (icon in row) is (v == verdict), (run, name, v)
        # an expectation's action is not written where a status is read: "[fail] id_not_null"
        assert not re.search(r"\[(?:fail|warn|drop)\]", html)
        # the page's status line: the run's verdict, its icon, never "Failed" for a warning
        status = re.search(r"Status:</span>\s*(<i [^>]*></i>)\s*(\w+)", html)
        assert status is not None, run
        assert ICONS[VERDICTS[run]] in status.group(1) and status.group(2) == LABELS[VERDICTS[run]]
        assert "Failed" not in status.group(0)


def test_the_stored_results_carry_gx_severity(probe: ProbeDocs) -> None:
    """GX's own reading of a stored validation agrees: ``success`` is whether every expectation held,
    and ``get_max_severity_failure`` is warning for the warning run, critical for the error run."""
    from great_expectations.expectations.metadata_types import FailureSeverity

    from quality.gx import _context

    ctx = _context(probe.docs_dir)
    by_run = {}
    for key in ctx.validation_results_store.list_keys():
        result = ctx.validation_results_store.get(key)
        by_run[key.run_id.run_name] = (result.success, result.get_max_severity_failure())
    assert by_run == {
        CLEAN_RUN: (True, None),
        WARNING_RUN: (False, FailureSeverity.WARNING),
        DIRTY_RUN: (False, FailureSeverity.CRITICAL),
    }


def test_an_expectation_that_compared_nothing_is_neither_passed_nor_failed(tmp_path: Path) -> None:
    """An outcome not measured (``Outcome.compared`` false: its table does not exist yet) shows GX's
    warning sign and the reason, not a pass and not a failure."""
    from quality.engine import Batch, Outcome
    from quality.gx import data_docs

    suite = probe_suite()
    reason = "not compared: no table gold.dd_probe yet"
    outcomes = [Outcome(e, False, 0, 0, reason) for e in suite.expectations]
    for o in outcomes:
        o.compared = False  # type: ignore[attr-defined]
    batch = Batch(suite.table, str(tmp_path / "gold" / "dd_probe"), None, None)
    html = data_docs(suite, batch, outcomes, tmp_path / "quality", "probe-missing").read_text()
    for e in suite.expectations:
        row = _row_of(html, e.name)
        assert "fa-exclamation-triangle text-warning" in row and reason in row
        assert "fa-check-circle" not in row and "fa-times" not in row
