"""A table built by other declared logic is named by `streamhouse check` and refused an incremental run."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa

from assets.delta import write_delta_arrow
from assets.lineage import commit_lineage
from assets.pipeline import load_pipeline
from assets.pipeline.fingerprint import built_logic, changed_logic, fields_json, logic_fingerprint

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "pipelines" / "demo"


def _declaration(tmp_path: Path, text: str) -> Path:
    (tmp_path / "pipeline.yaml").write_text((DEMO / "pipeline.yaml").read_text().replace("size: 5m", text))
    (tmp_path / "demo_gold.py").write_text((DEMO / "demo_gold.py").read_text())
    return tmp_path


def test_the_fingerprint_follows_what_decides_rows_and_nothing_else(tmp_path: Path) -> None:
    demo = load_pipeline(DEMO)
    same = load_pipeline(DEMO)
    assert logic_fingerprint(demo, "revenue_tumbling_5m") == logic_fingerprint(same, "revenue_tumbling_5m")
    wider = load_pipeline(
        _declaration(tmp_path / "a", "size: 10m") if (tmp_path / "a").mkdir() is None else DEMO
    )
    assert logic_fingerprint(wider, "revenue_tumbling_5m") != logic_fingerprint(demo, "revenue_tumbling_5m")
    assert logic_fingerprint(wider, "revenue_hopping_10m") == logic_fingerprint(demo, "revenue_hopping_10m")
    (tmp_path / "b").mkdir()
    retitled = _declaration(tmp_path / "b", "size: 5m")
    text = (
        (retitled / "pipeline.yaml").read_text().replace("Revenue per 5 min (top products)", "Top products")
    )
    (retitled / "pipeline.yaml").write_text(text.replace("Revenue, orders and units per product", "Sales"))
    assert logic_fingerprint(load_pipeline(retitled), "revenue_tumbling_5m") == logic_fingerprint(
        demo, "revenue_tumbling_5m"
    )


def test_changed_logic_is_read_from_the_tables_newest_data_commit(tmp_path: Path) -> None:
    uri = str(tmp_path / "gold" / "t")
    assert changed_logic("gold", "t", uri, "a" * 12) is None  # no table yet
    rows = pa.table({"x": [1, 2]})
    write_delta_arrow(rows, uri, mode="overwrite")
    assert built_logic(uri) is None and changed_logic("gold", "t", uri, "a" * 12) is None  # built before
    write_delta_arrow(rows, uri, mode="append", commit_metadata=commit_lineage({}, logic="b" * 12))
    write_delta_arrow(rows, uri, mode="append", commit_metadata={"streamhouse.job": "maintenance"})
    assert built_logic(uri) == "b" * 12
    assert changed_logic("gold", "t", uri, "b" * 12) is None
    why = changed_logic("gold", "t", uri, "a" * 12)
    assert why is not None and "streamhouse replay lake gold.t" in why and "b" * 12 in why


def test_check_names_the_tables_that_need_a_full_refresh(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    uri = str(lake / "gold" / "revenue_tumbling_5m")
    start = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
    row = pa.table(
        {
            "window_start": [start],
            "window_end": [start + timedelta(minutes=5)],
            "product_id": ["p-1"],
            "revenue": [1.0],
            "orders": [1],
            "units": [1],
            "window_date": [start.date()],
        }
    )
    write_delta_arrow(row, uri, mode="overwrite", commit_metadata=commit_lineage({}, logic="0" * 12))
    env = {**os.environ, "STREAMHOUSE_LAKE_ROOT": str(lake), "STREAMHOUSE_STATE_DIR": str(tmp_path / "state")}
    env.pop("STREAMHOUSE_PIPELINE", None)
    streamhouse = str(Path(sys.executable).parent / "streamhouse")
    run = subprocess.run(
        [streamhouse, "check", "gold.revenue_tumbling_5m", "--no-docs"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 1, run.stderr
    assert (
        "needs full_refresh: gold/revenue_tumbling_5m was built by other logic (000000000000)" in run.stdout
    )
    assert "streamhouse replay lake gold.revenue_tumbling_5m" in run.stdout and "Traceback" not in run.stderr
    current = logic_fingerprint(load_pipeline(DEMO), "revenue_tumbling_5m")
    write_delta_arrow(row, uri, mode="append", commit_metadata=commit_lineage({}, logic=current))
    again = subprocess.run(
        [streamhouse, "check", "gold.revenue_tumbling_5m", "--no-docs"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert "needs full_refresh" not in again.stdout, again.stdout


def test_a_field_may_be_added_to_a_silver_table_never_removed_or_retyped(tmp_path: Path) -> None:
    demo = load_pipeline(DEMO)
    (tmp_path / "c").mkdir()
    wider = _declaration(tmp_path / "c", "size: 5m")
    text = (wider / "pipeline.yaml").read_text()
    (wider / "pipeline.yaml").write_text(
        text.replace("      unit_price: double\n", "      unit_price: double\n      coupon: string\n")
    )
    added = load_pipeline(wider)
    assert "coupon" in added.event_tables["orders"].fields
    assert logic_fingerprint(added, "orders") == logic_fingerprint(demo, "orders")  # fields compared apart
    uri = str(tmp_path / "silver" / "orders")
    logic = logic_fingerprint(demo, "orders")
    lineage = commit_lineage({}, logic, fields_json(demo, "orders"))
    write_delta_arrow(pa.table({"x": [1]}), uri, mode="overwrite", commit_metadata=lineage)
    assert changed_logic("silver", "orders", uri, logic, fields_json(added, "orders")) is None
    retyped = fields_json(demo, "orders").replace('"quantity": "int"', '"quantity": "long"')
    why = changed_logic("silver", "orders", uri, logic, retyped)
    assert why is not None and "quantity retyped int -> long" in why
    removed = fields_json(demo, "orders").replace('"product_id": "string", ', "")
    assert "product_id removed" in (changed_logic("silver", "orders", uri, logic, removed) or "")


def test_a_key_left_at_its_default_is_no_part_of_the_fingerprint(tmp_path: Path) -> None:
    """Writing a default out, or a later version adding a key with a default, is no change of logic."""
    demo = load_pipeline(DEMO)
    (tmp_path / "d").mkdir()
    spelled = _declaration(tmp_path / "d", "size: 5m")
    text = (spelled / "pipeline.yaml").read_text()
    (spelled / "pipeline.yaml").write_text(text.replace("scd_type: 2", "scd_type: 2\n    format: upsert"))
    assert logic_fingerprint(load_pipeline(spelled), "customers") == logic_fingerprint(demo, "customers")
