"""Data Docs as a user opens them offline: the index and a validation page in headless Chromium
(Debian's ``/usr/bin/chromium``, as ``test_dagster_ui``), with every request that is neither
``file://`` nor loopback refused, as on a machine without internet.

The site is built from a real validation (``tests/quality/data_docs_probe.py``: a Delta table measured
clean, then with a row only a ``warn`` expectation rejects, then with one a ``fail`` expectation
rejects). The index must list the three runs with their verdicts (passed, warning, error: a warning is
a yellow sign, never the red cross of a failure), be styled (Bootstrap and font-awesome loaded from
beside the site), and the error run's page must show each expectation's verdict.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

import pytest

from tests.quality.data_docs_probe import (
    ASSET,
    DIRTY_RUN,
    EXPECTATION_VERDICTS,
    TABLE,
    VERDICTS,
    WARNING_RUN,
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


#: each verdict's status icon: font-awesome glyph and Bootstrap colour
ICONS = {
    "passed": "i.fa-check-circle.text-success",
    "warning": "i.fa-exclamation-triangle.text-warning",
    "error": "i.fa-times.text-danger",
}
#: Bootstrap's colour of each (computed: the icon is drawn in it)
COLOURS = {"passed": "rgb(40, 167, 69)", "warning": "rgb(255, 193, 7)", "error": "rgb(220, 53, 69)"}


def _status_icon(row) -> str:  # type: ignore[no-untyped-def]
    """The verdict whose status icon the row shows, checked drawn in its colour."""
    found = {verdict: row.locator(css) for verdict, css in ICONS.items()}
    shown = [verdict for verdict, icon in found.items() if icon.count()]
    assert len(shown) == 1 and found[shown[0]].count() == 1, (shown, row.inner_text())
    icon = found[shown[0]]
    # drawn once font-awesome's font has loaded (an icon glyph has no width before): wait for that, bounded
    icon.wait_for(state="visible", timeout=20_000)
    box = icon.bounding_box()
    assert box and box["width"] > 0, "the status icon is not drawn"
    assert icon.evaluate("e => getComputedStyle(e).color") == COLOURS[shown[0]], shown[0]
    return shown[0]


def test_data_docs_open_styled_offline_and_show_the_true_results(
    probe: ProbeDocs, offline_page: tuple[object, list[str]]
) -> None:
    page, refused = offline_page
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))  # type: ignore[attr-defined]

    page.goto(probe.index.as_uri())  # type: ignore[attr-defined]
    # the validation table (filled by bootstrap-table's JavaScript) lists both runs
    rows = page.locator("table.ge-index-page-validation-results-table tbody tr")  # type: ignore[attr-defined]
    rows.nth(2).wait_for()
    assert rows.count() == 3, rows.all_inner_texts()
    by_run = {}
    for i in range(rows.count()):
        text = rows.nth(i).inner_text()
        (run,) = [r for r in VERDICTS if r in text]
        assert TABLE in text and ASSET in text, text
        by_run[run] = _status_icon(rows.nth(i))
    assert by_run == VERDICTS  # the warning run: a yellow sign, not a red cross

    styled = page.evaluate(STYLED)  # type: ignore[attr-defined]
    assert styled == BOOTSTRAP, styled
    assert page.evaluate(FONT_LOADED), "font-awesome's font did not load"  # type: ignore[attr-defined]

    # a row opens its validation page
    rows.filter(has_text=DIRTY_RUN).first.click()
    page.wait_for_url(f"**/{DIRTY_RUN}/**")  # type: ignore[attr-defined]
    assert Path(urlparse(page.url).path).resolve() == probe.pages[DIRTY_RUN].resolve()  # type: ignore[attr-defined]
    assert page.evaluate(STYLED) == BOOTSTRAP  # type: ignore[attr-defined]
    assert page.evaluate(FONT_LOADED)  # type: ignore[attr-defined]
    for name, verdict in EXPECTATION_VERDICTS[DIRTY_RUN].items():
        row = page.locator("tr", has_text=f"{name}:")  # type: ignore[attr-defined]
        assert row.count() == 1, name
        assert row.first.is_visible()
        assert _status_icon(row.first) == verdict, name
        assert not row.first.inner_text().lstrip().startswith("[")
    assert "Status: Error" in " ".join(page.locator("body").inner_text().split())  # type: ignore[attr-defined]

    # the warning run's page says so, with its warning row
    page.go_back()  # type: ignore[attr-defined]
    rows.filter(has_text=WARNING_RUN).first.click()
    page.wait_for_url(f"**/{WARNING_RUN}/**")  # type: ignore[attr-defined]
    body = " ".join(page.locator("body").inner_text().split())  # type: ignore[attr-defined]
    assert "Status: Warning" in body and "Status: Failed" not in body
    for name, verdict in EXPECTATION_VERDICTS[WARNING_RUN].items():
        assert _status_icon(page.locator("tr", has_text=f"{name}:").first) == verdict, name  # type: ignore[attr-defined]

    assert refused == [], f"requests that would need the network: {refused}"
    assert errors == [], errors
