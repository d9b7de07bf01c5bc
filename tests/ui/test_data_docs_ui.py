"""Data Docs as a user opens them offline: the index and a validation page in headless Chromium
(Debian's ``/usr/bin/chromium``, as ``test_dagster_ui``), with every request that is neither
``file://`` nor loopback refused, as on a machine without internet.

The site is built from a real validation (``tests/quality/data_docs_probe.py``: a Delta table measured
clean, then with a bad row). The index must list both runs with the true status, be styled (Bootstrap
and font-awesome loaded from beside the site), and the failed run's page must show the passing
expectation as passed and the failing one as failed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

import pytest

from tests.quality.data_docs_probe import (
    ASSET,
    CLEAN_RUN,
    DIRTY_RUN,
    FAILING,
    PASSING,
    TABLE,
    ProbeDocs,
    build_probe_docs,
)
from tests.ui.test_dagster_ui import _chromium

pytestmark = [pytest.mark.slow]

LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}

#: The status icons' font, loaded (not merely declared): offline without it an icon is an empty box.
FONT_LOADED = """() => document.fonts.ready.then(() => [...document.fonts].some(f =>
  f.family.replace(/"/g, '') === 'Font Awesome 6 Free' && f.weight === '900'
  && f.status === 'loaded'))"""
#: Bootstrap's stylesheet applied (its rules cannot be read from a ``file://`` page, their effect can):
#: ``.navbar`` is a flex container (a ``nav`` is a block without it) and ``.text-danger`` is Bootstrap's
#: red (black without it).
STYLED = """() => {
  const probe = document.createElement('span');
  probe.className = 'text-danger';
  document.body.appendChild(probe);
  const color = getComputedStyle(probe).color;
  probe.remove();
  return {
    bootstrap: [...document.styleSheets].some(s => (s.href || '').endsWith('/bootstrap.min.css')),
    navbar: getComputedStyle(document.querySelector('nav.navbar')).display,
    danger: color,
  };
}"""
#: what ``STYLED`` returns on a page Bootstrap styles
BOOTSTRAP = {"bootstrap": True, "navbar": "flex", "danger": "rgb(220, 53, 69)"}


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory) -> ProbeDocs:
    root = tmp_path_factory.mktemp("data-docs-ui")
    return build_probe_docs(root / "lake", root / "state" / "quality")


@pytest.fixture(scope="module")
def offline_page() -> Iterator[tuple[object, list[str]]]:
    """A page whose context refuses every request that is not ``file://`` or loopback; yields it with
    the list of refused URLs."""
    from playwright.sync_api import sync_playwright

    refused: list[str] = []

    def route(r) -> None:  # type: ignore[no-untyped-def]
        url = urlparse(r.request.url)
        if url.scheme in ("file", "data", "blob", "about") or url.hostname in LOOPBACK:
            r.continue_()
        else:
            refused.append(r.request.url)
            r.abort("internetdisconnected")

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=_chromium(), headless=True)
        try:
            context = browser.new_context(viewport={"width": 1600, "height": 1000})
            context.set_default_timeout(30_000)
            context.route("**/*", route)
            yield context.new_page(), refused
        finally:
            browser.close()


def _status_icon(row) -> str:  # type: ignore[no-untyped-def]
    """``passed``/``failed``: which status icon the row shows, and that it is drawn."""
    passed, failed = row.locator("i.fa-check-circle.text-success"), row.locator("i.fa-times.text-danger")
    assert passed.count() + failed.count() == 1, row.inner_text()
    icon = passed if passed.count() else failed
    # drawn once font-awesome's font has loaded (an icon glyph has no width before): wait for that, bounded
    icon.wait_for(state="visible", timeout=20_000)
    box = icon.bounding_box()
    assert box and box["width"] > 0, "the status icon is not drawn"
    return "passed" if passed.count() else "failed"


def test_data_docs_open_styled_offline_and_show_the_true_results(
    probe: ProbeDocs, offline_page: tuple[object, list[str]]
) -> None:
    page, refused = offline_page
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))  # type: ignore[attr-defined]

    page.goto(probe.index.as_uri())  # type: ignore[attr-defined]
    # the validation table (filled by bootstrap-table's JavaScript) lists both runs
    rows = page.locator("table.ge-index-page-validation-results-table tbody tr")  # type: ignore[attr-defined]
    rows.nth(1).wait_for()
    assert rows.count() == 2, rows.all_inner_texts()
    by_run = {}
    for i in range(rows.count()):
        text = rows.nth(i).inner_text()
        run = CLEAN_RUN if CLEAN_RUN in text else DIRTY_RUN
        assert TABLE in text and ASSET in text and run in text, text
        by_run[run] = _status_icon(rows.nth(i))
    assert by_run == {CLEAN_RUN: "passed", DIRTY_RUN: "failed"}

    styled = page.evaluate(STYLED)  # type: ignore[attr-defined]
    assert styled == BOOTSTRAP, styled
    assert page.evaluate(FONT_LOADED), "font-awesome's font did not load"  # type: ignore[attr-defined]

    # a row opens its validation page
    rows.filter(has_text=DIRTY_RUN).first.click()
    page.wait_for_url(f"**/{DIRTY_RUN}/**")  # type: ignore[attr-defined]
    assert Path(urlparse(page.url).path).resolve() == probe.pages[DIRTY_RUN].resolve()  # type: ignore[attr-defined]
    assert page.evaluate(STYLED) == BOOTSTRAP  # type: ignore[attr-defined]
    assert page.evaluate(FONT_LOADED)  # type: ignore[attr-defined]
    for name, status in ((PASSING, "passed"), (FAILING, "failed")):
        row = page.locator("tr", has_text=f"{name}:")  # type: ignore[attr-defined]
        assert row.count() == 1, name
        assert row.first.is_visible()
        assert _status_icon(row.first) == status, name
        assert not row.first.inner_text().lstrip().startswith("[")
    assert "Status: Failed" in " ".join(page.locator("body").inner_text().split())  # type: ignore[attr-defined]

    assert refused == [], f"requests that would need the network: {refused}"
    assert errors == [], errors
