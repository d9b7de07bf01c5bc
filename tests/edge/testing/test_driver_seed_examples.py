"""The background material's examples as TopologyTestDriver tests."""

import re
from dataclasses import dataclass

from edge.dsl import Consumed, Grouped, Joined, Materialized, Produced, StreamsBuilder
from edge.processor import StreamsConfig
from edge.serde import Serdes
from edge.testing import TopologyTestDriver

S, L, J = Serdes.string(), Serdes.long(), Serdes.json()


def config(app):
    return StreamsConfig(app, default_key_serde=S, default_value_serde=S)


def test_word_count():
    b = StreamsBuilder()
    (
        b.stream("streams-plaintext-input", Consumed.with_(S, S))
        .flat_map_values(lambda line: [w for w in re.split(r"\W+", line.lower()) if w])
        .group_by(lambda _key, word: word)
        .count(materialized="counts-store")
        .to_stream()
        .to("streams-wordcount-output", Produced.with_(S, L))
    )
    with TopologyTestDriver(b.build(), config("wordcount")) as d:
        lines = d.create_input_topic("streams-plaintext-input", S, S)
        lines.pipe_value_list(["all streams lead to Kafka", "hello kafka streams", "join kafka summit"])
        counts = d.create_output_topic("streams-wordcount-output", S, L).read_key_values_to_map()
        assert counts == {
            "all": 1,
            "streams": 2,
            "lead": 1,
            "to": 1,
            "kafka": 3,
            "hello": 1,
            "join": 1,
            "summit": 1,
        }
        assert d.get_key_value_store("counts-store").get("kafka") == 3


@dataclass
class Order:
    order_id: str
    customer_id: str
    amount: float


@dataclass
class Customer:
    customer_id: str
    name: str
    tier: str
    credit_limit: float


def test_order_enrichment_stream_table_join():
    orders_serde, customer_serde = Serdes.dataclass(Order), Serdes.dataclass(Customer)
    b = StreamsBuilder()
    customers = b.table("customers", Consumed.with_(S, customer_serde), "customers-store")

    def enrich(order, customer):
        if customer is None:
            return {"order_id": order.order_id, "customer_name": "UNKNOWN", "within_credit_limit": False}
        return {
            "order_id": order.order_id,
            "customer_name": customer.name,
            "tier": customer.tier,
            "within_credit_limit": order.amount <= customer.credit_limit,
        }

    (
        b.stream("orders", Consumed.with_(S, orders_serde))
        .select_key(lambda _k, order: order.customer_id)
        .left_join(customers, enrich, joined=Joined.with_(S, orders_serde, customer_serde))
        .to("enriched-orders", Produced.with_(S, J))
    )
    with TopologyTestDriver(b.build(), config("orders")) as d:
        c = d.create_input_topic("customers", S, customer_serde)
        for cust in [Customer("C001", "Alice", "gold", 10000.0), Customer("C002", "Bob", "silver", 500.0)]:
            c.pipe_input(cust.customer_id, cust)
        o = d.create_input_topic("orders", S, orders_serde)
        o.pipe_input("ORD-1", Order("ORD-1", "C001", 299.99))
        o.pipe_input("ORD-2", Order("ORD-2", "C002", 750.0))
        o.pipe_input("ORD-3", Order("ORD-3", "C004", 50.0))
        out = d.create_output_topic("enriched-orders", S, J).read_key_values_to_list()
    assert out == [
        (
            "C001",
            {"order_id": "ORD-1", "customer_name": "Alice", "tier": "gold", "within_credit_limit": True},
        ),
        (
            "C002",
            {"order_id": "ORD-2", "customer_name": "Bob", "tier": "silver", "within_credit_limit": False},
        ),
        ("C004", {"order_id": "ORD-3", "customer_name": "UNKNOWN", "within_credit_limit": False}),
    ]


def test_browser_actions_left_joined_with_captcha_verified():
    asked = []
    b = StreamsBuilder()
    events = b.stream("browser-events", Consumed.with_(S, J))
    captcha_verified = (
        events.filter(lambda _k, e: e["logger_name"] == "captcha-verified")
        .map(lambda _k, e: (e["browserHash"], 1))
        .group_by_key(Grouped.with_(S, Serdes.int()))
        .reduce(
            lambda v1, _v2: v1, materialized=Materialized.as_("captchaStore").with_value_serde(Serdes.int())
        )
    )
    actions = (
        events.filter(lambda _k, e: e["logger_name"] == "action")
        .map(lambda _k, e: (e["browserHash"], 1))
        .group_by_key(Grouped.with_(S, Serdes.int()))
        .count(materialized="actions-count")
    )
    joined = actions.left_join(captcha_verified, lambda count, captcha: count if captcha is None else 0)
    joined.to_stream().filter(lambda _browser, count: count >= 3).foreach(
        lambda browser, _c: asked.append(browser)
    )
    with TopologyTestDriver(b.build(), config("captcha")) as d:
        tin = d.create_input_topic("browser-events", S, J)

        def event(browser, kind):
            tin.pipe_input(None, {"browserHash": browser, "logger_name": kind})

        for _ in range(3):
            event("b1", "action")
        event("b2", "captcha-verified")
        for _ in range(4):
            event("b2", "action")
        event("b1", "action")
    assert asked == ["b1", "b1"]  # b1 crossed the threshold twice; b2 solved the captcha


def test_inventory_on_hand_from_sales_and_shipments_with_reorder_alerts():
    """Shipments add to and sales subtract from stock; a reorder alert fires when stock drops low."""
    b = StreamsBuilder()
    shipments = b.stream("shipments", Consumed.with_(S, L))
    sales = b.stream("sales", Consumed.with_(S, L)).map_values(lambda qty: -qty)
    on_hand = (
        shipments.merge(sales)
        .group_by_key(Grouped.with_(S, L))
        .reduce(lambda a, b: a + b, materialized=Materialized.as_("inventory").with_value_serde(L))
    )
    (
        on_hand.to_stream()
        .filter(lambda _product, qty: qty < 5)
        .map_values(lambda qty: {"reorder": True, "on_hand": qty})
        .to("reorder-alerts", Produced.with_(S, J))
    )
    with TopologyTestDriver(b.build(), config("retail")) as d:
        ship = d.create_input_topic("shipments", S, L)
        sell = d.create_input_topic("sales", S, L)
        ship.pipe_input("widget", 10)
        ship.pipe_input("gadget", 3)
        sell.pipe_input("widget", 4)
        sell.pipe_input("widget", 3)
        ship.pipe_input("widget", 20)
        assert d.get_key_value_store("inventory").to_dict() == {"gadget": 3, "widget": 23}
        alerts = d.create_output_topic("reorder-alerts", S, J).read_key_values_to_list()
    assert alerts == [
        ("gadget", {"reorder": True, "on_hand": 3}),
        ("widget", {"reorder": True, "on_hand": 3}),
    ]
