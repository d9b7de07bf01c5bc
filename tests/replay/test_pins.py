"""Pinned input versions (``assets.replay.pins``): what the assets read in an as-of replay."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from assets.gold.freshness import GoldInput
from assets.replay.pins import InputPinError, pin_inputs, pinned_input


@pytest.fixture
def table(tmp_path: Path) -> str:
    uri = str(tmp_path / "silver" / "orders")
    for i in range(3):  # versions 0, 1, 2
        write_deltalake(uri, pa.table({"order_id": [f"o-{i}"]}), mode="append")
    return uri


def test_a_pin_picks_the_version_and_only_for_its_input(table: str) -> None:
    assert pinned_input(table, "silver/orders", None) == 2
    assert pinned_input(table, "silver/orders", {"silver/orders": 1}) == 1
    assert pinned_input(table, "silver/orders", {"silver/clicks": 0}) == 2
    inputs = [GoldInput("silver/orders", table, 2, "event_date"), GoldInput("silver/x", table, 2, None)]
    pinned = pin_inputs(inputs, {"silver/orders": 0})
    assert [(i.name, i.version) for i in pinned] == [("silver/orders", 0), ("silver/x", 2)]
    assert pinned[0].column == "event_date" and inputs[0].version == 2  # a copy, the original unchanged


def test_a_pin_outside_the_table_versions_is_refused(table: str, tmp_path: Path) -> None:
    with pytest.raises(InputPinError, match=r"has versions 0\.\.2"):
        pinned_input(table, "silver/orders", {"silver/orders": 3})
    with pytest.raises(InputPinError, match="does not exist"):
        pinned_input(str(tmp_path / "missing"), "silver/missing", {"silver/missing": 0})
