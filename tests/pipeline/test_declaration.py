"""The pipeline declaration: the demo's own, what `pipeline check` says about mistakes, the JSON Schema.

The demo's ``pipelines/demo/pipeline.yaml`` must describe the lake the project builds today, so it is
compared field by field with the constants the assets still read; when they read the declaration
instead, this comparison becomes the equivalence the contract tests already hold.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import jsonschema
import pytest
import yaml
from click.testing import CliRunner

from assets.pipeline import PipelineError, check_pipeline, load_pipeline
from assets.pipeline.model import AsOfJoin, WindowAggregate
from assets.pipeline.schema import pipeline_json_schema, pipeline_json_schema_text
from orchestration.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "pipelines" / "demo"

MINIMAL = """\
name: shop
sources:
  payments: {partitions: 3}
event_tables:
  payments:
    fields: {payment_id: string, merchant_id: string, amount: double, paid_at: timestamp}
    key: [payment_id]
    event_time: paid_at
"""


def _write(tmp_path: Path, text: str) -> Path:
    (tmp_path / "pipeline.yaml").write_text(textwrap.dedent(text))
    return tmp_path


def _messages(folder: Path) -> list[str]:
    _, problems = check_pipeline(folder)
    return [f"{p.line}: {p.message}" for p in problems]


def test_the_demo_declaration_gives_the_silver_tables_the_demo_has_always_had() -> None:
    """The demo's tables as silver builds them from pipelines/demo (the generator still writes the
    payloads of ``PAYLOAD_SCHEMAS``): same contracts, keys, event times and rules as before the lake
    was declared, so the contract tests and the DuckDB recomputation hold unchanged."""
    from assets.edge_apps.registry import EDGE_APPS
    from assets.gold.assets import GOLD_TABLES
    from assets.sample_data import EDGE_OUTPUT_TOPICS, PAYLOAD_SCHEMAS, TOPICS
    from assets.silver.transform import silver_specs

    demo = load_pipeline(DEMO)
    assert {n: s.partitions for n, s in demo.sources.items()} == {**TOPICS, **EDGE_OUTPUT_TOPICS}
    specs = silver_specs(demo)
    assert {n: dict(s.contract) for n, s in specs.items()} == PAYLOAD_SCHEMAS
    assert {n: (s.key, s.time_col, s.scd_type) for n, s in specs.items()} == {
        "orders": (("order_id",), "event_time", 0),
        "clicks": (("event_id",), "event_time", 0),
        "customers": (("customer_id", "updated_at"), None, 2),
        "products": (("product_id",), None, 0),
    }
    declared = {n: [(e.name, e.action, e.violation, e.message) for e in s.declared] for n, s in specs.items()}
    assert declared == {
        "orders": [
            ("quantity_positive", "drop", "quantity < 1", "'quantity must be > 0'"),
            ("unit_price_non_negative", "drop", "unit_price < 0", "'unit_price must be >= 0'"),
            ("quantity_plausible", "warn", "quantity > 1000", "'quantity above 1000'"),
        ],
        "clicks": [
            (
                "page_in_set",
                "warn",
                "page NOT IN ('/', '/menu', '/product', '/cart', '/checkout', '/account')",
                "concat('page not in the known set: ', page)",
            )
        ],
        "products": [
            ("list_price_non_negative", "drop", "list_price < 0", "'list_price must be >= 0'"),
            (
                "category_in_set",
                "warn",
                "category NOT IN ('coffee', 'tea', 'bakery', 'juice')",
                "concat('category not in the known set: ', category)",
            ),
        ],
        "customers": [
            (
                "segment_in_set",
                "warn",
                "segment NOT IN ('consumer', 'smb', 'enterprise')",
                "concat('segment not in the known set: ', segment)",
            ),
            (
                "country_in_set",
                "warn",
                "country NOT IN ('DE', 'FR', 'NL', 'US', 'GB')",
                "concat('country not in the known set: ', country)",
            ),
        ],
    }
    assert list(demo.gold_tables) == GOLD_TABLES
    tumbling = demo.gold_tables["revenue_tumbling_5m"]
    assert isinstance(tumbling, WindowAggregate) and tumbling.window.size == 5 * 60_000
    assert {n: (a.function, a.expression) for n, a in tumbling.aggregates.items()} == {
        "revenue": ("sum", "quantity * unit_price"),
        "orders": ("count", "*"),
        "units": ("sum", "quantity"),
    }
    sessions = demo.gold_tables["click_sessions"]
    assert isinstance(sessions, WindowAggregate) and sessions.window.gap == 30 * 60_000
    assert {n: (a.application_id or n, a.target, a.server) for n, a in demo.edge_apps.items()} == {
        app.application_id: (app.application_id, app.target, app.server) for app in EDGE_APPS
    }


def test_a_minimal_declaration_loads_with_its_defaults(tmp_path: Path) -> None:
    shop = load_pipeline(_write(tmp_path, MINIMAL))
    assert shop.sources["payments"].replication_factor == -1
    assert shop.event_tables["payments"].expectations == []


def test_unknown_keys_get_a_did_you_mean_at_their_line(tmp_path: Path) -> None:
    folder = _write(
        tmp_path,
        MINIMAL.replace("partitions: 3", "partitons: 3")
        + """\
gold_tables:
  totals:
    kind: window_aggregate
    from: payments
    windw: {type: tumbling, size: 1h}
    aggregates: {total: sum(amount)}
""",
    )
    assert _messages(folder) == [
        "3: sources.payments.partitons: unknown key 'partitons'; did you mean 'partitions'?",
        "10: gold_tables.totals.window: required, missing",
        "13: gold_tables.totals.windw: unknown key 'windw'; did you mean 'window'?",
    ]


def test_wrong_types_and_kinds_name_what_is_allowed(tmp_path: Path) -> None:
    folder = _write(
        tmp_path,
        MINIMAL.replace("amount: double", "amount: dubble")
        + """\
    expectations:
      - {expect: range, column: amount, min: 0, action: quarantin}
      - {expect: nonnull, column: payment_id}
gold_tables:
  totals:
    kind: window_aggregate
    from: payments
    window: {type: tumbling, size: 5x}
    aggregates: {total: median(amount)}
""",
    )
    assert _messages(folder) == [
        "6: event_tables.payments.fields.amount: 'dubble' is not one of 'string', 'int', 'long', 'double' "
        "or 'timestamp'",
        "10: event_tables.payments.expectations[0].action: 'quarantin' is not one of 'warn', 'quarantine' "
        "or 'fail'",
        "11: event_tables.payments.expectations[1]: 'nonnull' is not one of 'not_null', 'range', 'in_set', "
        "'regex', 'unique', 'sql'",
        "16: gold_tables.totals.window.size: '5x' is not a duration: write milliseconds or a number with "
        "ms, s, m, h or d",
        "17: gold_tables.totals.aggregates.total: 'median(amount)' is not an aggregate: write "
        "FUNCTION(expression) with one of sum, count, count_distinct, min, max, avg",
    ]


def test_references_to_undeclared_tables_and_columns_and_cycles(tmp_path: Path) -> None:
    folder = _write(
        tmp_path,
        MINIMAL.replace("key: [payment_id]", "key: [paymentid]")
        + """\
    expectations:
      - {expect: sql, name: positive, valid_when: "amout > 0"}
gold_tables:
  by_merchant:
    kind: window_aggregate
    from: payments
    window: {type: hopping, size: 10m}
    group_by: [merchant]
    aggregates: {total: sum(amount)}
  a:
    kind: sql
    query: WITH x AS (SELECT * FROM gold.b) SELECT * FROM x
    partition_by: day
  b:
    kind: sql
    query: SELECT * FROM gold.a JOIN silver.paymnts USING (payment_id)
    partition_by: day
  profile:
    kind: as_of_join
    from: payments
    with: payments
    on: [merchant_id]
""",
    )
    assert _messages(folder) == [
        "7: event_tables.payments.key (table payments): unknown column 'paymentid'; "
        "did you mean 'payment_id'?",
        "10: event_tables.payments.expectations[0].valid_when (table payments): unknown column 'amout'; "
        "did you mean 'amount'?",
        "15: gold_tables.by_merchant.window: a hopping window needs hop (> 0)",
        "16: gold_tables.by_merchant.group_by (table payments): unknown column 'merchant'; "
        "did you mean 'merchant_id'?",
        "18: gold tables form a cycle: a -> b -> a",
        "24: gold_tables.b: unknown table 'paymnts'; did you mean 'payments'?",
        "29: gold_tables.profile.with: 'payments' is not an SCD2 change table",
    ]


def test_yaml_mistakes_are_problems_not_tracebacks(tmp_path: Path) -> None:
    assert _messages(_write(tmp_path, MINIMAL + "  payments:\n    fields: {a: string}\n")) == [
        "9: event_tables.payments: written twice (first on line 5)"
    ]
    assert _messages(_write(tmp_path, "name: [unclosed\n")) == [
        "2: not valid YAML: expected ',' or ']', but got '<stream end>'"
    ]
    assert _messages(_write(tmp_path, "- a list\n")) == [
        "1: the declaration must be a mapping (name:, sources:, ...)"
    ]


def test_python_functions_are_resolved_in_the_pipeline_folder(tmp_path: Path) -> None:
    (tmp_path / "shop_gold.py").write_text("def daily(payments):\n    return payments\n")
    text = MINIMAL + textwrap.dedent(
        """\
        gold_tables:
          daily:
            kind: python
            function: shop_gold:daily
            inputs: [silver.payments]
            partition_by: day
          weekly:
            kind: python
            function: shop_gold:weekly
            inputs: [payments]
            partition_by: day
          monthly:
            kind: python
            function: shop_missing:monthly
            inputs: [payments]
            partition_by: day
        """
    )
    messages = _messages(_write(tmp_path, text))
    assert messages == [
        "17: gold_tables.weekly.function: module 'shop_gold' has no 'weekly'",
        "22: gold_tables.monthly.function: cannot import 'shop_missing': ModuleNotFoundError: "
        "No module named 'shop_missing'",
    ]


def test_cli_check_prints_file_line_problems_and_exits_2(tmp_path: Path) -> None:
    folder = _write(tmp_path, MINIMAL.replace("partitions: 3", "partitions: three"))
    result = CliRunner().invoke(cli, ["pipeline", "check", str(folder)])
    assert result.exit_code == 2
    assert f"{folder / 'pipeline.yaml'}:3: sources.payments.partitions:" in result.output
    assert "1 problem" in result.output and "Traceback" not in result.output
    ok = CliRunner().invoke(cli, ["pipeline", "check", str(DEMO)])
    assert ok.exit_code == 0, ok.output
    assert (
        "pipeline 'demo' is valid: 6 source(s), 3 event table(s), 1 change table(s), 4 gold table(s)"
        in ok.output
    )
    missing = CliRunner().invoke(cli, ["pipeline", "check", str(tmp_path / "nowhere")])
    assert missing.exit_code == 2 and "no pipeline.yaml in" in missing.output


def test_load_raises_one_error_carrying_every_problem(tmp_path: Path) -> None:
    folder = _write(tmp_path, MINIMAL.replace("key: [payment_id]", "key: [nope]"))
    with pytest.raises(PipelineError) as caught:
        load_pipeline(folder)
    assert len(caught.value.problems) == 1 and "1 problem in the pipeline declaration" in str(caught.value)


def test_the_published_json_schema_is_current_and_agrees_with_the_loader(tmp_path: Path) -> None:
    published = ROOT / "docs" / "pipeline.schema.json"
    assert published.read_text() == pipeline_json_schema_text(), "run: streamhouse pipeline schema -o " + str(
        published.relative_to(ROOT)
    )
    schema = pipeline_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    demo = yaml.safe_load((DEMO / "pipeline.yaml").read_text())
    assert list(validator.iter_errors(demo)) == []
    broken = json.loads(json.dumps(demo))
    broken["sources"]["orders"]["partitons"] = 4
    broken["gold_tables"]["revenue_tumbling_5m"]["window"]["size"] = "5 minutes"
    assert len(list(validator.iter_errors(broken))) == 2


def test_a_join_from_a_table_kept_whole_is_refused(tmp_path: Path) -> None:
    text = MINIMAL + textwrap.dedent(
        """\
        change_tables:
          merchants:
            fields: {merchant_id: string, changed_at: timestamp}
            keys: [merchant_id]
            sequence_by: changed_at
        gold_tables:
          merchant_payments:
            kind: join
            from: merchants
            with: payments
            on: [merchant_id]
        """
    )
    text = text.replace("payments: {partitions: 3}", "payments: {partitions: 3}\n  merchants: {}")
    assert _messages(_write(tmp_path, text)) == [
        "18: gold_tables.merchant_payments.from: 'merchants' is kept whole, not by day; a join is "
        "partitioned by the days of its `from` table (an event table with an event_time, or a gold table)"
    ]


def test_as_of_join_to_an_scd2_table_is_accepted(tmp_path: Path) -> None:
    text = MINIMAL + textwrap.dedent(
        """\
        change_tables:
          merchants:
            fields: {merchant_id: string, country: string, changed_at: timestamp}
            keys: [merchant_id]
            sequence_by: changed_at
            scd_type: 2
        gold_tables:
          payments_with_merchant:
            kind: as_of_join
            from: payments
            with: merchants
            on: [merchant_id]
            columns: [country, valid_from]
            chart: {x: paid_at, y: amount, series: country}
        """
    )
    shop = load_pipeline(
        _write(tmp_path, text.replace("payments: {partitions: 3}", "payments: {}\n  merchants: {}"))
    )
    join = shop.gold_tables["payments_with_merchant"]
    assert isinstance(join, AsOfJoin) and join.with_ == "merchants"
