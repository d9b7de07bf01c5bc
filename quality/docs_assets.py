"""Data Docs that open styled with no network: GX's CDN links rewritten to assets served beside the site.

GX's page templates link Bootstrap, bootstrap-table, jQuery, Popper, font-awesome (the status icons),
the datepicker, the dark theme and Vega from public CDNs, and its logo from an S3 bucket (with the
project's id in the query string). Offline, or wherever those hosts are unreachable, a page then opens
unstyled, its tables (the index lists validations with JavaScript) stay empty and a passed or failed
status icon is an empty ``<i>``. The installed ``great_expectations`` ships none of these files (only
its own stylesheet, fonts and images, under ``static/``), so the exact versions GX links are vendored
from npm (``npm pack <name>@<version>``, only the files the pages load, with their licenses) under
``quality/data_docs_assets/<name>@<version>/``; ``install`` copies them into the site's
``static/vendor/`` and ``localize`` rewrites each page GX writes to load them by relative paths (the site
still works when copied elsewhere or opened from ``file://``). Nothing is fetched at run time.

A GX upgrade that links another URL leaves it remote: ``tests/quality/test_data_docs.py`` fails on
any page that still loads CSS or JavaScript over the network, and ``CDN`` gets the new file.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import threading
from pathlib import Path

#: The vendored files, committed with the project.
ASSETS = Path(__file__).resolve().parent / "data_docs_assets"
#: Where they are copied, under the site's root.
VENDOR = Path("static") / "vendor"

#: Each URL GX 1.24's templates load → its copy under ``ASSETS`` (same package and version; a
#: ``vega@5``-style range is pinned to the newest release of that major version when vendored). The
#: templates link filter-control's CSS from bootstrap-table 1.19.0 (minified or not): 1.19.1's is used.
_BT = "https://unpkg.com/bootstrap-table@"
_CDNJS = "https://cdnjs.cloudflare.com/ajax/libs/"
_FILTER = "dist/extensions/filter-control/bootstrap-table-filter-control"
CDN: dict[str, str] = {
    f"{_BT}1.19.1/dist/bootstrap-table.min.css": "bootstrap-table@1.19.1/dist/bootstrap-table.min.css",
    f"{_BT}1.19.1/dist/bootstrap-table.min.js": "bootstrap-table@1.19.1/dist/bootstrap-table.min.js",
    f"{_BT}1.19.0/{_FILTER}.min.css": f"bootstrap-table@1.19.1/{_FILTER}.min.css",
    f"{_BT}1.19.0/{_FILTER}.css": f"bootstrap-table@1.19.1/{_FILTER}.min.css",
    f"{_BT}1.19.1/{_FILTER}.min.js": f"bootstrap-table@1.19.1/{_FILTER}.min.js",
    "https://maxcdn.bootstrapcdn.com/bootstrap/4.3.1/css/bootstrap.min.css": "bootstrap@4.3.1/dist/css/bootstrap.min.css",  # noqa: E501
    "https://stackpath.bootstrapcdn.com/bootstrap/4.3.1/js/bootstrap.min.js": "bootstrap@4.3.1/dist/js/bootstrap.min.js",  # noqa: E501
    f"{_CDNJS}bootstrap-datepicker/1.9.0/css/bootstrap-datepicker.min.css": (
        "bootstrap-datepicker@1.9.0/dist/css/bootstrap-datepicker.min.css"
    ),
    f"{_CDNJS}bootstrap-datepicker/1.9.0/js/bootstrap-datepicker.min.js": (
        "bootstrap-datepicker@1.9.0/dist/js/bootstrap-datepicker.min.js"
    ),
    "https://cdn.jsdelivr.net/npm/@forevolve/bootstrap-dark@1.1.0/dist/css/bootstrap-prefers-dark.css": (
        "bootstrap-dark@1.1.0/dist/css/bootstrap-prefers-dark.min.css"
    ),
    f"{_CDNJS}font-awesome/6.6.0/css/all.min.css": "fontawesome-free@6.6.0/css/all.min.css",
    "https://code.jquery.com/jquery-3.7.1.min.js": "jquery@3.7.1/dist/jquery.min.js",
    f"{_CDNJS}popper.js/1.12.9/umd/popper.min.js": "popper.js@1.12.9/dist/umd/popper.min.js",
    "https://cdn.jsdelivr.net/npm/vega@5": "vega@5.33.1/vega.min.js",
    "https://cdn.jsdelivr.net/npm/vega-lite@5": "vega-lite@5.23.0/vega-lite.min.js",
    "https://cdn.jsdelivr.net/npm/vega-embed@6": "vega-embed@6.29.0/vega-embed.min.js",
}

#: GX's logo (and its dark-theme variant) come from this bucket; GX ships the logo in ``static/images``.
GX_IMAGES = "https://great-expectations-web-assets.s3.us-east-2.amazonaws.com/"
_IMAGE = re.compile(re.escape(GX_IMAGES) + r"([A-Za-z0-9_.-]+)(?:\?[^\"')\s]*)?")
#: A ``<script src=…>`` or ``<link href=…>`` tag naming one of the CDN URLs; the whole opening tag is
#: replaced: its ``integrity``/``crossorigin`` attributes would make Chromium refuse a ``file://`` script.
_TAG = re.compile(
    r"<(script|link)\b[^>]*?\b(?:src|href)=\"(" + "|".join(re.escape(u) for u in CDN) + r")\"[^>]*?/?>"
)

#: A link into the site's ``static/`` folder, relative to the page: GX counts the ``../`` itself, one
#: short for the favicon of a validation page (``validations/<layer>/<table>/<run>/<time>/<batch>.html``).
_STATIC = re.compile(r"(?<=\")(?:\./|(?:\.\./)+)static/([^\"?#]+)(?=\")")

_LOCK = threading.Lock()


@functools.cache
def _fingerprint() -> str:
    """Names and sizes of the vendored files: a changed set is copied again into existing sites."""
    h = hashlib.sha256()
    for path in sorted(ASSETS.rglob("*")):
        if path.is_file():
            h.update(f"{path.relative_to(ASSETS)}:{path.stat().st_size}\n".encode())
    return h.hexdigest()[:16]


def install(site: Path) -> Path:
    """Copy the vendored assets into ``site/static/vendor`` unless this set of them is there already
    (a marker file names it: one ``stat`` per call, so a cleaned site gets them again)."""
    target = site.resolve() / VENDOR
    marker = target / f".streamhouse-{_fingerprint()}"
    with _LOCK:
        if not marker.is_file():
            shutil.copytree(ASSETS, target, dirs_exist_ok=True)
            marker.touch()
    return target


def localize_html(html: str, page: Path, site: Path) -> str:
    """``html`` (the page at ``page`` in ``site``) loading every CDN asset and GX image from ``site``,
    and every link into ``static/`` pointing where the file is."""
    base = page.resolve().parent
    site = site.resolve()

    def rel(path: Path) -> str:
        return Path(os.path.relpath(path, base)).as_posix()

    def tag(m: re.Match[str]) -> str:
        local = rel(site / VENDOR / CDN[m.group(2)])
        if m.group(1) == "script":
            return f'<script src="{local}">'
        return f'<link rel="stylesheet" href="{local}">'

    def image(m: re.Match[str]) -> str:
        name = m.group(1)
        if not (site / "static" / "images" / name).is_file():
            name = "logo-long.png"  # e.g. the dark theme's logo, which GX does not ship
        return rel(site / "static" / "images" / name)

    def static(m: re.Match[str]) -> str:
        return rel(site / "static" / m.group(1))

    return _STATIC.sub(static, _IMAGE.sub(image, _TAG.sub(tag, html)))


def localize(pages: list[Path], site: Path) -> None:
    """Rewrite the pages GX just wrote (in place) to load their assets from ``site``."""
    install(site)
    for page in pages:
        if not page.is_file():
            continue
        html = page.read_text(encoding="utf-8")
        out = localize_html(html, page, site)
        if out != html:
            page.write_text(out, encoding="utf-8")
