"""Data quality: expectation suites of every lake table, run as Dagster asset checks.

* ``quality.suites`` — the suites as code (row rules of silver come from ``assets.silver.expectations``)
* ``quality.engine`` — measures a suite in Spark SQL or DuckDB over Arrow
* ``quality.gx`` — Great Expectations suites, validation results and Data Docs (imported lazily)
* ``quality.docs_assets`` — Data Docs that open offline: GX's CDN CSS/JS vendored (``data_docs_assets/``)
* ``quality.runner`` — one suite: measure + Data Docs (used by the checks and ``streamhouse check``)
* ``quality.checks`` — the Dagster ``multi_asset_check`` per table and the ``quality`` resource

Imports go ``quality → assets → edge``; nothing here imports ``orchestration``.
"""
