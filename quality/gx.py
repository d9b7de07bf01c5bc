"""Great Expectations: suites, validation results and Data Docs, imported lazily (GX costs seconds).

A ``quality.suites.Suite`` becomes a GX ``ExpectationSuite`` (one ``ExpectationConfiguration`` per
expectation, the action in its ``meta``); the outcomes measured by ``quality.engine`` become
``ExpectationValidationResult`` objects in one ``ExpectationSuiteValidationResult`` per validation,
stored in a file-backed GX project under ``<docs_dir>/gx`` and rendered by GX's Data Docs site builder:
``<docs_dir>/gx/uncommitted/data_docs/local_site/validations/<layer>/<table>/<run>/<time>/<batch>.html``.
Each page GX writes is rewritten to load its CSS and JavaScript from the site (``quality.docs_assets``):
GX links them from CDNs, and offline a page was unstyled, the index's table empty and every status icon
blank.

GX's own Spark datasource is not used: its execution engine runs one Spark job per metric, and the
``great-expectations[spark]`` extra pins a PySpark older than ours; the engine here measures a suite with
a handful of aggregate queries instead.
"""

from __future__ import annotations

import atexit
import os
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from quality.docs_assets import localize
from quality.engine import Batch, Outcome
from quality.suites import Suite
from quality.verdict import worst

if TYPE_CHECKING:
    from great_expectations.core import ExpectationSuiteValidationResult

_LOCK = threading.Lock()
_CONTEXTS: dict[str, Any] = {}


def _import_gx() -> Any:
    # No usage statistics leave the machine; no progress bars in the run log.
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    import great_expectations as gx

    _quiet_gx()
    return gx


def _quiet_gx() -> None:
    """Keep GX's console chatter out of run logs and the demo's output (hundreds of lines a run).

    Reconciliation queries name their tables instead of GX's ``{batch}`` (the engine, not GX, runs
    them), and GX *prints* a warning for every such query it parses; shadowing ``print`` in that one
    module silences it for every thread, and GX still logs the same text at INFO. The site builder
    warns for each old validation whose result file is gone (a reset lake) while it skips it anyway.
    """
    import logging

    from great_expectations.expectations.core import unexpected_rows_expectation

    unexpected_rows_expectation.print = lambda *args, **kwargs: None  # type: ignore[attr-defined]
    logging.getLogger("great_expectations.render.renderer.site_builder").setLevel(logging.ERROR)


def gx_suite(suite: Suite) -> Any:
    gx = _import_gx()
    from great_expectations.expectations.expectation_configuration import ExpectationConfiguration

    out = gx.ExpectationSuite(name=suite.table, meta={"streamhouse_description": suite.description})
    for e in suite.expectations:
        out.add_expectation_configuration(_configuration(e, ExpectationConfiguration))
    return out


#: What an expectation's action does when it fails, as its Data Docs line says it.
ON_FAILURE = {"fail": "blocks downstream", "warn": "warns", "drop": "quarantines the row"}


def _configuration(e: Any, cls: Any, *, warning: bool = False) -> Any:
    """The GX configuration of ``e``. Data Docs show a configuration's ``description`` in place of
    GX's own wording, beside the status icon: it names the expectation and, last, what its action does
    on failure. (It began with ``[fail]`` for a ``fail`` action, which read as the status of a passed
    expectation.) GX's ``severity`` is critical for a ``fail`` expectation (an error), warning for the
    others, and warning for any result ``warning`` marks (one that could not be compared): Data Docs
    (``quality.gx_render``) and ``get_max_severity_failure`` read it."""
    from great_expectations.expectations.metadata_types import FailureSeverity

    text = f"{e.name}: {e.description}" if e.description else e.name
    critical = e.action == "fail" and not warning
    return cls(
        type=e.gx_type,
        kwargs=dict(e.gx_kwargs),
        meta={"name": e.name, "action": e.action, "severity": e.severity, "kind": e.kind},
        description=f"{text} (if violated: {ON_FAILURE.get(e.action, e.action)}, action {e.action!r})",
        severity=FailureSeverity.CRITICAL if critical else FailureSeverity.WARNING,
    )


def validation_result(
    suite: Suite, batch: Batch, outcomes: list[Outcome], run_name: str, run_time: datetime
) -> ExpectationSuiteValidationResult:
    _import_gx()
    from great_expectations.core import ExpectationSuiteValidationResult, ExpectationValidationResult
    from great_expectations.core.run_identifier import RunIdentifier
    from great_expectations.expectations.expectation_configuration import ExpectationConfiguration

    results = []
    for o in outcomes:
        result: dict[str, Any] = {
            "element_count": o.element_count,
            "unexpected_count": o.failing_rows,
            "unexpected_percent": o.unexpected_percent,
            "partial_unexpected_list": o.sample,
            "observed_value": o.observed,
        }
        results.append(
            ExpectationValidationResult(
                success=o.success,
                expectation_config=_configuration(
                    o.expectation, ExpectationConfiguration, warning=not o.compared
                ),
                result=result,
                exception_info=_not_measured(o),
            )
        )
    passed = sum(1 for o in outcomes if o.success)
    asset = "/".join(suite.asset_key_path)
    return ExpectationSuiteValidationResult(
        success=passed == len(outcomes),
        results=results,
        suite_name=suite.table,
        statistics={
            "evaluated_expectations": len(outcomes),
            "successful_expectations": passed,
            "unsuccessful_expectations": len(outcomes) - passed,
            "success_percent": 100.0 * passed / len(outcomes) if outcomes else 100.0,
        },
        # The index lists a validation only if GX can name its asset: ``batch_spec.data_asset_name``,
        # else ``active_batch_definition.data_asset_name`` (a None there raised, and GX skipped every
        # validation with a log line: the index listed none). The asset is named by its Dagster key.
        meta={
            "run_id": RunIdentifier(run_name=run_name, run_time=run_time),
            "batch_spec": {
                "data_asset_name": asset,
                "table": batch.table,
                "uri": batch.uri,
                "delta_version": batch.version,
                # the index renders a validation from its success and batch spec only (gx_render)
                VERDICT_KEY: worst(o.verdict for o in outcomes),
            },
            "batch_markers": {"days": [d.isoformat() for d in batch.days or []], "rows": batch.rows},
            "active_batch_definition": {
                "datasource_name": "streamhouse",
                "data_connector_name": batch.engine or "delta",
                "data_asset_name": asset,
                "batch_identifiers": {"batch": batch.label},
            },
            "checkpoint_name": None,
        },
    )


#: The key of a validation's ``meta["batch_spec"]`` holding its verdict: the index renders a validation
#: from its success and batch spec only (``quality.gx_render``).
VERDICT_KEY = "verdict"

#: The project's one Data Docs site, as GX names it in a new project.
SITE = "local_site"
SITE_CONFIG: dict[str, Any] = {
    "class_name": "SiteBuilder",
    # GX's how-to buttons, tutorial links and the walkthrough dialog that covers each validation page
    # on opening (once its JavaScript loads, as it now does offline) are for GX newcomers, not for
    # reading this project's results.
    "show_how_to_buttons": False,
    "store_backend": {
        "class_name": "TupleFilesystemStoreBackend",
        "base_directory": "uncommitted/data_docs/local_site/",
    },
    # GX's renderers draw a warning as a failure; these draw passed, warning and error (gx_render).
    "site_index_builder": {
        "class_name": "DefaultSiteIndexBuilder",
        "renderer": {"module_name": "quality.gx_render", "class_name": "VerdictIndexPageRenderer"},
    },
    "site_section_builders": {
        "validations": {
            "renderer": {"module_name": "quality.gx_render", "class_name": "VerdictValidationPageRenderer"}
        }
    },
}


def _not_measured(o: Outcome) -> dict[str, Any] | None:
    """An outcome that compared nothing (``Outcome.compared`` false: no table yet) as GX's "raised an
    exception": Data Docs then show it with a warning sign and the reason, neither passed nor failed."""
    if getattr(o, "compared", True):
        return None
    reason = str(o.observed)
    return {"raised_exception": True, "exception_message": reason, "exception_traceback": reason}


def _context(docs_dir: Path) -> Any:
    """The file-backed GX project under ``docs_dir`` (created on first use, its site configured as
    ``SITE_CONFIG``), one per process."""
    gx = _import_gx()
    key = str(docs_dir.resolve())
    with _LOCK:
        ctx = _CONTEXTS.get(key)
        if ctx is None:
            docs_dir.mkdir(parents=True, exist_ok=True)
            ctx = gx.get_context(mode="file", project_root_dir=str(docs_dir))
            if dict((ctx.config.data_docs_sites or {}).get(SITE) or {}) != SITE_CONFIG:
                ctx.update_data_docs_site(SITE, SITE_CONFIG)
            _CONTEXTS[key] = ctx
        return ctx


def site_path(docs_dir: Path) -> Path:
    """The root of the Data Docs site (``index.html``, ``validations/``, ``static/``)."""
    return docs_dir / "gx" / "uncommitted" / "data_docs" / SITE


def data_docs(
    suite: Suite,
    batch: Batch,
    outcomes: list[Outcome],
    docs_dir: Path,
    run_name: str,
    *,
    build_index: bool = True,
) -> Path:
    """Store the validation in the GX project and render its Data Docs page; returns the page's path.

    ``build_index=False`` renders only the validation's and the suite's pages: the index lists every
    validation ever stored, so rebuilding it costs more with each run (``build_index`` does it once).
    """
    from great_expectations.data_context.types.resource_identifiers import (
        ExpectationSuiteIdentifier,
        ValidationResultIdentifier,
    )

    ctx = _context(docs_dir)
    run_time = datetime.now(UTC)
    result = validation_result(suite, batch, outcomes, run_name, run_time)
    with _LOCK:
        ctx.suites.add_or_update(gx_suite(suite))
        suite_id = ExpectationSuiteIdentifier(name=suite.table)
        ident = ValidationResultIdentifier(
            expectation_suite_identifier=suite_id, run_id=result.meta["run_id"], batch_identifier=batch.label
        )
        ctx.validation_results_store.set(ident, result)
        ctx.build_data_docs(resource_identifiers=[ident, suite_id], build_index=build_index)
        page = _page(ctx, ident)
        pages = [page, _page(ctx, suite_id)] + ([index_path(docs_dir)] if build_index else [])
        localize(pages, site_path(docs_dir))
    return page


def _page(ctx: Any, resource: Any) -> Path:
    url = ctx.get_docs_sites_urls(resource_identifier=resource, site_name=SITE)[0]["site_url"]
    return Path(url.removeprefix("file://"))


def build_index(docs_dir: Path) -> Path:
    """Render the Data Docs index page (every stored validation); returns its path.

    Only the index: GX's builder renders a page for every stored suite and validation when given no
    resource identifiers (each run's pages are rendered by ``data_docs`` already, and re-rendering
    them all undid their local asset links), so it is given one that names no stored resource.
    """
    from great_expectations.data_context.types.resource_identifiers import ExpectationSuiteIdentifier

    ctx = _context(docs_dir)
    with _LOCK:
        ctx.build_data_docs(
            resource_identifiers=[ExpectationSuiteIdentifier(name=_NO_RESOURCE)], build_index=True
        )
        localize([index_path(docs_dir)], site_path(docs_dir))
    return index_path(docs_dir)


#: A suite name no suite has (``build_index`` renders no page but the index).
_NO_RESOURCE = "streamhouse.index-only"

#: A scheduled index build waits this long after the last validation asked for it (the checks of one
#: run come in a burst: one build covers them all).
INDEX_QUIET_S = 1.0
_STALE: dict[Path, float] = {}
_STALE_LOCK = threading.Condition()
_BUILDER: list[threading.Thread] = []


def schedule_index(docs_dir: Path) -> None:
    """Rebuild the index soon, once for a burst of validations, off the caller's thread.

    The asset checks of a run call this after rendering their own pages: the index (0.5 s at a few
    dozen stored validations, more with every run) is then built once per run instead of once per
    check. A missing index is built at once; ``flush_index`` (also run at exit) waits for the rest.
    """
    docs_dir = docs_dir.resolve()
    if not index_path(docs_dir).is_file():
        build_index(docs_dir)
        return
    with _STALE_LOCK:
        _STALE[docs_dir] = time.monotonic()
        if not _BUILDER or not _BUILDER[0].is_alive():
            _BUILDER[:] = [threading.Thread(target=_build_stale, name="gx-data-docs-index", daemon=True)]
            _BUILDER[0].start()
        _STALE_LOCK.notify_all()


def _build_stale() -> None:
    while True:
        with _STALE_LOCK:
            if not _STALE:
                _STALE_LOCK.notify_all()
                return
            docs_dir, marked = min(_STALE.items(), key=lambda kv: kv[1])
            wait = marked + INDEX_QUIET_S - time.monotonic()
            if wait > 0:
                _STALE_LOCK.wait(wait)
                continue
            del _STALE[docs_dir]
        build_index(docs_dir)


def flush_index(timeout: float = 60.0) -> None:
    """Build every scheduled index now and wait for it (tests, and the end of the process)."""
    with _STALE_LOCK:
        for key in _STALE:
            _STALE[key] = 0.0
        _STALE_LOCK.notify_all()
        thread = _BUILDER[0] if _BUILDER else None
    if thread is not None:
        thread.join(timeout)


atexit.register(flush_index)


def index_path(docs_dir: Path) -> Path:
    return site_path(docs_dir) / "index.html"
