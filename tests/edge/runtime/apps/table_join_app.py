"""Apps for the runtime tests of the foreign-key join and of versioned stream-table joins.

``EDGE_IN`` holds two topics, ``"<left or stream>,<right table>"``; ``EDGE_OUT`` the output topic.

* ``fk_join``: orders table (``order -> "customer|amount"``) joined on the customer id with the
  customers table; the result ``order -> "amount@customer name"`` is materialized as ``fk-result``.
* ``versioned_join``: an orders stream keyed by customer joined with the customer table as of each
  order's timestamp (versioned store ``customers-versioned``, 1 h history), output ``"order@name"``.
"""

from __future__ import annotations

import os

from edge.dsl import Consumed, Joined, Materialized, Produced, StreamsBuilder
from edge.serde import Serdes

S = Serdes.string()


def _topics() -> tuple[str, str, str]:
    left, right = os.environ["EDGE_IN"].split(",")
    return left, right, os.environ["EDGE_OUT"]


def fk_join() -> StreamsBuilder:
    left, right, out = _topics()
    b = StreamsBuilder()
    orders = b.table(left, Consumed.with_(S, S))
    customers = b.table(right, Consumed.with_(S, S))
    orders.join(
        customers,
        lambda order, name: f"{order.split('|')[1]}@{name}",
        materialized=Materialized.as_("fk-result").with_value_serde(S),
        foreign_key_extractor=lambda order: order.split("|")[0],
    ).to_stream().to(out, Produced.with_(S, S))
    return b


def versioned_join() -> StreamsBuilder:
    stream, table, out = _topics()
    b = StreamsBuilder()
    customers = b.table(
        table, Consumed.with_(S, S), Materialized.as_versioned("customers-versioned", 3_600_000)
    )
    orders = b.stream(stream, Consumed.with_(S, S))
    orders.join(customers, lambda order, name: f"{order}@{name}", joined=Joined.with_(S, S, S)).to(
        out, Produced.with_(S, S)
    )
    return b
