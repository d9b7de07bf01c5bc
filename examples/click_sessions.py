"""Click sessions, live: the edge half of the sessions check in ``streamhouse demo``.

    streamhouse edge run examples.click_sessions:topology --application-id sessions \\
        --server 127.0.0.1:7071 -c default.deserialization.exception.handler=continue

Reads JSON clicks from ``clicks`` (SESSIONS_INPUT, keyed by user), drops the ones silver would
quarantine (missing or mistyped fields), and groups each user's clicks into sessions with Kafka
Streams' session windows: clicks at most 30 minutes apart share a session (the gap is inclusive).
The queryable session store ``click-sessions`` holds every session (retention 30 days); once a session
has closed (30 minutes without a click, plus a grace period for late clicks) its final result goes to
``edge_click_sessions`` (SESSIONS_OUTPUT) as JSON ``{"user_id", "session_start", "session_end",
"clicks", "pages"}``, exactly once per session.

Each session keeps the ids of its clicks, so a click sent twice (a producer retry) counts once, as
silver deduplicates by event id: the sessions then equal the gold table ``click_sessions``.

**Why the result does not depend on timing.** A session closes by stream time: the newest click its task
has seen. A click more than the gap plus the grace behind it finds its session closed and is dropped
(logged as "Skipping record for expired window", counted in ``dropped-records``) while gold keeps it.
So the sessions equal gold's whatever the machine's load, as long as each task's clicks arrive in
event-time order up to the grace; what this app and its producers do for that, as your own app would:

* the clicks topic is **keyed by user**, so ``group_by_key`` needs no repartition topic: each task reads
  one input partition in offset order, and how the four partitions' records interleave (which depends
  on timing) changes nothing. Re-keying here (``group_by``, ``select_key``) would merge the partitions
  in a repartition topic in whatever order their tasks ran, and the grace would then have to cover the
  whole backlog (hours to days of event time when catching up);
* the **producer is idempotent** (``enable.idempotence=true``; librdkafka's default is false): otherwise
  a retried batch can land after newer ones and the partition is no longer in event-time order (the
  demo's sample producers, ``assets.sample_data``, set it);
* the **grace (1 h)** covers the disorder left: a retry's duplicate arrives minutes after its original.
  Malformed clicks are filtered before the aggregation, so one carrying a far-off timestamp does not
  move the session's stream time. ``max.task.idle.ms`` does not apply: a task reads a single partition.

Clicks produced after newer ones of the same users (``streamhouse generate`` writing yesterday's clicks,
then a demo run producing three days again) are late by days: the app drops them, and the demo says
so rather than comparing (docs/demo.md).
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta
from typing import Any

from edge import (
    Consumed,
    Grouped,
    Materialized,
    Produced,
    Serdes,
    SessionWindows,
    StreamsBuilder,
    Suppressed,
)
from edge.topology import Topology

STORE = "click-sessions"
GAP = timedelta(minutes=30)
GRACE = timedelta(hours=1)
RETENTION = timedelta(days=30)


def is_valid_click(_key: Any, click: Any) -> bool:
    """Silver's click contract: string ids and page, an ISO-8601 event time."""
    if not isinstance(click, dict):
        return False
    if not all(isinstance(click.get(f), str) for f in ("event_id", "user_id", "page", "event_time")):
        return False
    try:
        datetime.fromisoformat(click["event_time"].replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def new_session() -> dict[str, list[str]]:
    return {"events": [], "pages": []}


def add_click(_user: str, click: dict[str, Any], session: dict[str, list[str]]) -> dict[str, list[str]]:
    events = set(session["events"]) | {click["event_id"]}
    pages = set(session["pages"]) | {click["page"]}
    return {"events": sorted(events), "pages": sorted(pages)}


def merge_sessions(_user: str, a: dict[str, list[str]], b: dict[str, list[str]]) -> dict[str, list[str]]:
    return {
        "events": sorted(set(a["events"]) | set(b["events"])),
        "pages": sorted(set(a["pages"]) | set(b["pages"])),
    }


def session_row(windowed: Any, session: dict[str, list[str]]) -> dict[str, Any]:
    return {
        "user_id": windowed.key,
        "session_start": windowed.window.start,
        "session_end": windowed.window.end,
        "clicks": len(session["events"]),
        "pages": len(session["pages"]),
    }


def topology(input_topic: str | None = None, output_topic: str | None = None) -> Topology:
    builder = StreamsBuilder()
    (
        builder.stream(
            input_topic or os.environ.get("SESSIONS_INPUT", "clicks"),
            Consumed.with_(Serdes.string(), Serdes.json()),
        )
        .filter(is_valid_click)
        .group_by_key(Grouped.with_(Serdes.string(), Serdes.json()))
        .windowed_by(SessionWindows.of_inactivity_gap_and_grace(GAP, GRACE))
        .aggregate(
            new_session,
            add_click,
            merge_sessions,
            materialized=Materialized.as_(STORE).with_value_serde(Serdes.json()).with_retention(RETENTION),
        )
        .suppress(Suppressed.until_window_closes(Suppressed.BufferConfig.unbounded()))
        .to_stream()
        .filter(lambda _key, session: session is not None)
        .map(lambda windowed, session: (windowed.key, session_row(windowed, session)))
        .to(
            output_topic or os.environ.get("SESSIONS_OUTPUT", "edge_click_sessions"),
            Produced.with_(Serdes.string(), Serdes.json()),
        )
    )
    return builder.build()
