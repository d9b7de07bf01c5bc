"""Which declared logic built a table, so old and new logic are never silently mixed in one table.

Every silver and gold write records its table's *logic fingerprint* in the Delta commit
(``streamhouse.logic``): a hash of the parts of its declaration that decide its rows (fields, keys,
expectations, windows, aggregates, joins, queries, a Python table's source). Descriptions, owners and
charts are left out: changing them changes no row. When the declaration changes a table's logic, its
fingerprint changes, and an incremental run of that table refuses to add days built the new way next to
days built the old way; ``full_refresh`` (``streamhouse replay lake <table>``) rebuilds it whole.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
from typing import Any

from assets.pipeline.model import Pipeline, PythonTable

#: The Delta commit metadata key holding the fingerprint of the logic that wrote the commit.
LOGIC_KEY = "streamhouse.logic"
#: Keys of a table's declaration that change no row.
_PRESENTATION = {"description", "owners", "chart"}


def _python_source(function: str) -> str:
    """The source of a Python table's module (its edits change the rows), or the name if unreadable."""
    module_name, _, _ = function.partition(":")
    try:
        return inspect.getsource(importlib.import_module(module_name))
    except (ImportError, OSError, TypeError):
        return function


def logic_fingerprint(pipeline: Pipeline, table: str) -> str:
    """The fingerprint of a declared silver or gold table's logic (12 hex digits)."""
    declared = pipeline.silver_tables().get(table) or pipeline.gold_tables[table]
    body: dict[str, Any] = declared.model_dump(mode="json", by_alias=True, exclude=_PRESENTATION)
    if isinstance(declared, PythonTable):
        body["source"] = _python_source(declared.function)
    text = json.dumps({"table": table, **body}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def built_logic(table_uri: str, look_back: int = 50) -> str | None:
    """The fingerprint the table's newest data commit recorded (maintenance commits record none);
    None for a table that does not exist yet or was written before fingerprints were recorded."""
    from assets.delta import history, table_exists

    if not table_exists(table_uri):
        return None
    for entry in history(table_uri, limit=look_back):
        if LOGIC_KEY in entry:
            return str(entry[LOGIC_KEY])
    return None


def changed_logic(layer: str, table: str, table_uri: str, current: str) -> str | None:
    """Why an incremental run of the table must not go on (its logic changed since it was built), or
    None when it may."""
    built = built_logic(table_uri)
    if built is None or built == current:
        return None
    return (
        f"{layer}/{table} was built by other logic ({built}) than its declaration now gives ({current}): "
        f"an incremental run would mix the two, so nothing was written. Rebuild it whole with "
        f"`streamhouse replay lake {layer}.{table}` (or run it with full_refresh)"
    )


def stale_tables(pipeline: Pipeline, lake_root: str, tables: list[tuple[str, str]]) -> dict[str, str]:
    """``layer.table`` -> why it needs a full refresh, for each of ``tables`` ((layer, name) pairs) built
    by other logic than the declaration now gives."""
    from assets.lake.layout import table_uri

    out: dict[str, str] = {}
    for layer, name in tables:
        if layer not in ("silver", "gold") or (
            name not in pipeline.silver_tables() and name not in pipeline.gold_tables
        ):
            continue
        why = changed_logic(layer, name, table_uri(lake_root, layer, name), logic_fingerprint(pipeline, name))
        if why is not None:
            out[f"{layer}.{name}"] = why
    return out
