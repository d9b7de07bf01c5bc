"""The written contract (docs/data-contract.md) is where the code reads it: Dagster descriptions come
from it (and never break the code location), and the analyst glossary documents the same columns. No
broker, no Spark."""

from __future__ import annotations

from pathlib import Path

from assets import contract
from assets.lake.glossary import TABLES


def test_contract_documents_every_table_the_glossary_knows() -> None:
    documented = set(contract.tables())
    for name, (_what, columns) in TABLES.items():
        table = name.replace(".*", ".<topic>")
        assert table in documented, table
        assert set(contract.columns(table)) == set(columns), table


def test_contract_sections_are_the_dagster_descriptions() -> None:
    from assets.gold.assets import GOLD_ASSETS

    for asset in GOLD_ASSETS:
        key = asset.key
        text = asset.descriptions_by_key[key]
        assert text == contract.description(".".join(key.path), ""), key
        assert "| column | type | unit | meaning |" in text
    from assets.bronze.assets import BRONZE_ASSETS
    from assets.silver.assets import SILVER_ASSETS

    for asset in SILVER_ASSETS:
        for key in asset.keys:
            layer = "silver" if key.path[0] == "silver" else "quarantine"
            table = f"{layer}.{key.path[-1]}" if layer == "silver" else "quarantine.<topic>"
            assert contract.description(table, "") in asset.descriptions_by_key[key], key
    bronze = contract.description("bronze.<topic>", "")
    assert bronze and all(bronze in a.descriptions_by_key[a.key] for a in BRONZE_ASSETS)
    sessions = contract.description("gold.click_sessions", "")
    assert "inclusive" in sessions and "`duration_ms`" in sessions


def test_contract_descriptions_fall_back_without_the_document(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.md"
    assert contract.description("gold.click_sessions", "fallback", path=missing) == "fallback"
    assert contract.columns("gold.click_sessions", path=missing) == {}
    broken = tmp_path / "broken.md"
    broken.write_bytes(b"\xff\xfe not utf-8 ### `gold.x`")
    assert contract.description("gold.x", "fallback", path=broken) == "fallback"
    partial = tmp_path / "partial.md"
    partial.write_text("# Contract\n\n### `gold.other`\n\nOther table.\n", encoding="utf-8")
    assert contract.description("gold.click_sessions", "fallback", path=partial) == "fallback"
    assert contract.description("gold.other", "fallback", path=partial) == "Other table."
