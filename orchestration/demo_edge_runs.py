"""The demo's edge apps (``examples.revenue``, ``examples.click_sessions`` and
``examples.revenue_windows``): run until caught up, then read their stores over the interactive-query
HTTP server.

Each app resumes from its consumer group, so a rerun of the demo reads only the new records; the
result is what the lake's gold tables are compared with (``orchestration.demo_edge_vs_gold``).
"""

from __future__ import annotations

import json
import time
import urllib.request
from dataclasses import dataclass
from typing import Any

from edge.kafka import KafkaClientConfig
from orchestration.demo_offsets import count_records, pending_records
from orchestration.demo_report import DemoSummary
from orchestration.settings import Settings


def wait_caught_up(app: Any, expected: int, what: str) -> None:
    """At least every new input processed, then no progress for 1.5 s (three commit intervals)."""
    deadline = time.monotonic() + 180
    last, still_since = -1, time.monotonic()
    while time.monotonic() < deadline:
        n = app.stats.records_processed
        if n != last:
            last, still_since = n, time.monotonic()
        elif n >= expected and time.monotonic() - still_since > 1.5:
            return
        time.sleep(0.1)
    raise TimeoutError(f"{what} processed {last} records; expected at least {expected}")


def _start_app(settings: Settings, client: KafkaClientConfig, topology: Any, application_id: str) -> Any:
    from edge.runtime import StreamsApp

    app = StreamsApp(
        topology,
        {
            "application.id": application_id,
            "bootstrap.servers": client.bootstrap_servers,
            "broker.profile": client.profile.value,
            "kafka": dict(client.extra),
            "state.dir": str(settings.state_dir / "streams"),
            "application.server": "127.0.0.1:0",
            "commit.interval.ms": 500,
            "default.deserialization.exception.handler": "continue",
        },
    )
    app.start()
    if not app.wait_until_running(90):
        app.close(30)
        raise RuntimeError(f"edge app {application_id} did not reach RUNNING (state {app.state.name})")
    return app


def _store_entries(app: Any, store: str) -> list[dict[str, Any]]:
    """Every entry of ``store``, through the app's interactive-query HTTP server."""
    with urllib.request.urlopen(f"http://{app.advertised_server}/v1/stores/{store}/all?limit=10000000") as r:
        return list(json.loads(r.read())["entries"])


def run_edge_revenue(
    settings: Settings, client: KafkaClientConfig, prefix: str, summary: DemoSummary
) -> dict[str, float]:
    """The ``revenue`` edge app over the orders until caught up; its store read over HTTP."""
    from assets.edge_apps import edge_app
    from assets.sample_data import EDGE_REVENUE, ORDERS
    from examples.revenue import STORE, topology

    application_id = f"{prefix}{edge_app('revenue').application_id}"
    orders = f"{prefix}{ORDERS}"
    expected = pending_records(client, application_id, orders)
    started = time.perf_counter()
    app = _start_app(settings, client, topology(orders, f"{prefix}{EDGE_REVENUE}"), application_id)
    try:
        wait_caught_up(app, expected, application_id)
        revenue = {e["key"]: float(e["value"]) for e in _store_entries(app, STORE)}
        server = app.advertised_server
    finally:
        app.close(30)
    summary.add(
        "Edge app revenue",
        f"examples.revenue (application.id {application_id}) read {expected:,} new orders in "
        f"{time.perf_counter() - started:.1f}s; store {STORE!r} holds {len(revenue)} products, "
        f"queried at http://{server}",
    )
    return revenue


@dataclass(frozen=True)
class EdgeSessions:
    """What the ``sessions`` edge app holds after a demo run, and what it dropped on the way."""

    #: every session in its store: (user, start ms, end ms, clicks, pages)
    sessions: set[tuple[str, int, int, int, int]]
    #: clicks this run dropped as late: their session had closed (more than the gap plus the grace
    #: behind the newest click of their partition), counted in Kafka's dropped-records metric
    late: int
    #: records this run could not decode (dropped too, and silver quarantines them)
    undecodable: int


def late_clicks(app: Any) -> tuple[int, int]:
    """(late, undecodable) records of this run: the tasks' dropped-records (Kafka's metric counts both
    a record for a closed window and one skipped by the deserialization handler) less the
    deserialization errors. The sessions app has keyed clicks only, so no drop is for a null key."""
    tasks = app.stores.dropped_records() if app.stores is not None else []
    dropped = sum(n for _task, n in tasks)
    undecodable = int(app.stats.errors.get("deserialization_errors", 0))
    return max(0, dropped - undecodable), undecodable


def run_edge_sessions(
    settings: Settings, client: KafkaClientConfig, prefix: str, summary: DemoSummary
) -> EdgeSessions:
    """The ``sessions`` edge app over the clicks until caught up; its sessions (user, start, end,
    clicks, pages) from the session store over HTTP, and the clicks it dropped as late."""
    from assets.edge_apps import edge_app
    from assets.sample_data import CLICKS
    from edge.kafka import TopicSpec, create_topics
    from examples.click_sessions import STORE, topology

    application_id = f"{prefix}{edge_app('sessions').application_id}"
    clicks, output = f"{prefix}{CLICKS}", f"{prefix}edge_click_sessions"
    expected = pending_records(client, application_id, clicks)
    create_topics(client, [TopicSpec(output, 4)])
    started = time.perf_counter()
    app = _start_app(settings, client, topology(clicks, output), application_id)
    try:
        wait_caught_up(app, expected, application_id)
        sessions = {
            (
                e["key"],
                e["window"]["start"],
                e["window"]["end"],
                len(e["value"]["events"]),
                len(e["value"]["pages"]),
            )
            for e in _store_entries(app, STORE)
        }
        late, undecodable = late_clicks(app)
    finally:
        app.close(30)
    final = count_records(client, output)
    summary.add(
        "Edge app sessions",
        f"examples.click_sessions (application.id {application_id}) read {expected:,} new clicks in "
        f"{time.perf_counter() - started:.1f}s: {len(sessions):,} sessions in store {STORE!r}, "
        f"{final:,} final results in {output} (closed windows; the latest are still open)"
        + (f"; {late:,} clicks dropped as late (their session had closed)" if late else ""),
    )
    return EdgeSessions(sessions, late, undecodable)


def run_edge_revenue_windows(
    settings: Settings, client: KafkaClientConfig, prefix: str, summary: DemoSummary
) -> int:
    """The ``revenue-windows`` edge app over the orders until caught up, so that bronze ingests its
    windows and gold's check ``edge_windows_match_gold`` compares them; returns the records it dropped.

    It runs as catching up on a backlog needs (``examples.revenue_windows``' docstring): every update of
    a window, with a grace covering the batch, since the three days of orders reach its repartition
    topic one input partition after another (Kafka Streams does the same) and a one-day grace dropped
    about half of them. The records it drops are then the malformed orders silver quarantines too
    (Kafka's dropped-records counts them with any late ones)."""
    from assets.edge_apps import edge_app
    from assets.sample_data import EDGE_REVENUE_5M, ORDERS
    from edge.kafka import TopicSpec, create_topics
    from examples.revenue_windows import BACKLOG_GRACE, topology

    application_id = f"{prefix}{edge_app('revenue-windows').application_id}"
    orders, output = f"{prefix}{ORDERS}", f"{prefix}{EDGE_REVENUE_5M}"
    expected = pending_records(client, application_id, orders)
    create_topics(client, [TopicSpec(output, 4)])
    started = time.perf_counter()
    app = _start_app(
        settings, client, topology(orders, output, BACKLOG_GRACE, final_only=False), application_id
    )
    try:
        wait_caught_up(app, expected, application_id)
        tasks = app.stores.dropped_records() if app.stores is not None else []
        dropped = sum(n for _task, n in tasks)
    finally:
        app.close(30)
    summary.add(
        "Edge app revenue windows",
        f"examples.revenue_windows (application.id {application_id}) read {expected:,} new orders in "
        f"{time.perf_counter() - started:.1f}s: 5-minute windows per product to {output}, every update "
        f"(grace {BACKLOG_GRACE.days} days: the batch is a backlog; docs/demo.md); {dropped:,} records "
        "dropped (malformed, as silver quarantines them, or late); gold's check edge_windows_match_gold "
        "compares the windows",
    )
    return dropped
