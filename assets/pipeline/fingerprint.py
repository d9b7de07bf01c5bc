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
from collections.abc import Mapping
from typing import Any

from assets.pipeline.model import Pipeline, PythonTable

#: The Delta commit metadata key holding the fingerprint of the logic that wrote the commit.
LOGIC_KEY = "streamhouse.logic"
#: ...and, for a silver table, its declared fields and their types (JSON): a field may be added to a
#: table that holds data (older rows read null), never removed or retyped without a rebuild.
FIELDS_KEY = "streamhouse.fields"
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
    silver = pipeline.silver_tables().get(table)
    declared = silver or pipeline.gold_tables[table]
    # A silver table's fields are compared on their own (``changed_fields``): adding one is no change.
    exclude = _PRESENTATION | ({"fields"} if silver is not None else set())
    # Values left at their defaults are left out: a key a later version adds (with a default) changes
    # no table's fingerprint, so an upgrade never looks like changed logic.
    body: dict[str, Any] = declared.model_dump(
        mode="json", by_alias=True, exclude=exclude, exclude_defaults=True
    )
    if isinstance(declared, PythonTable):
        body["source"] = _python_source(declared.function)
    text = json.dumps({"table": table, **body}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _built(table_uri: str, look_back: int = 50) -> dict[str, Any] | None:
    """The newest data commit's metadata that records a fingerprint (maintenance commits record none);
    None for a table that does not exist yet or was written before fingerprints were recorded."""
    from assets.delta import history, table_exists

    if not table_exists(table_uri):
        return None
    return next((entry for entry in history(table_uri, limit=look_back) if LOGIC_KEY in entry), None)


def built_logic(table_uri: str) -> str | None:
    """The fingerprint of the logic that wrote the table's newest data commit (None: unknown)."""
    entry = _built(table_uri)
    return str(entry[LOGIC_KEY]) if entry is not None else None


def fields_json(pipeline: Pipeline, table: str) -> str | None:
    """A silver table's declared fields as recorded in its commits (None for a gold table)."""
    silver = pipeline.silver_tables().get(table)
    return json.dumps(dict(silver.fields), sort_keys=True) if silver is not None else None


def changed_fields(built: Mapping[str, str], current: Mapping[str, str]) -> list[str]:
    """Fields removed or retyped since the table was built (added ones are fine)."""
    return [
        f"{name} {'removed' if name not in current else f'retyped {typ} -> {current[name]}'}"
        for name, typ in built.items()
        if current.get(name) != typ
    ]


def changed_logic(
    layer: str, table: str, table_uri: str, current: str, fields: str | None = None
) -> str | None:
    """Why an incremental run of the table must not go on (its logic changed since it was built, or
    a field was removed or retyped), or None when it may."""
    entry = _built(table_uri)
    if entry is None:
        return None
    built = str(entry[LOGIC_KEY])
    rebuild = (
        f"an incremental run would mix the two, so nothing was written. Rebuild it whole with "
        f"`streamhouse replay lake {layer}.{table}` (or run it with full_refresh)"
    )
    if built != current:
        return (
            f"{layer}/{table} was built by other logic ({built}) than its declaration now gives "
            f"({current}): {rebuild}"
        )
    if fields is not None and FIELDS_KEY in entry:
        changes = changed_fields(json.loads(str(entry[FIELDS_KEY])), json.loads(fields))
        if changes:
            changed = ", ".join(changes)
            return f"{layer}/{table}'s declared fields changed since it was built ({changed}): {rebuild}"
    return None


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
        uri = table_uri(lake_root, layer, name)
        why = changed_logic(layer, name, uri, logic_fingerprint(pipeline, name), fields_json(pipeline, name))
        if why is not None:
            out[f"{layer}.{name}"] = why
    return out
