"""The windowed examples (examples/browser_actions.py, examples/click_sessions.py) in the test driver."""

from __future__ import annotations

from edge import Serdes, TopologyTestDriver
from edge.processor import StreamsConfig
from examples import browser_actions, click_sessions

MIN = 60_000


def test_browser_actions_counted_in_hopping_windows() -> None:
    topology = browser_actions.topology("actions", "counts")
    with TopologyTestDriver(topology, StreamsConfig("actions")) as driver:
        actions = driver.create_input_topic("actions", Serdes.string(), Serdes.string())
        out = driver.create_output_topic("counts", Serdes.string(), Serdes.long())
        actions.pipe_input("ann", "click", 4_500)  # windows [0,5) [2,7) [4,9) (seconds)
        actions.pipe_input("ann", "scroll", 6_100)  # [2,7) [4,9) [6,11)
        actions.pipe_input("bob", "click", 6_200)
        actions.pipe_input("ann", "hover", 12_000)  # [8,13) [10,15) [12,17)
        # 9.5 s is in [6,11), closed at stream time 12 s (end 11 s + 1 s grace: the boundary) -> dropped,
        # and in [8,13), still open -> counted, keeping that window's newest input time (12 s)
        actions.pipe_input("ann", "late", 9_500)
        got = [(r.key, r.value, r.timestamp) for r in out.read_records_to_list()]
        assert got[:3] == [("ann@0", 1, 4_500), ("ann@2000", 1, 4_500), ("ann@4000", 1, 4_500)]
        assert got[3:6] == [("ann@2000", 2, 6_100), ("ann@4000", 2, 6_100), ("ann@6000", 1, 6_100)]
        assert got[9:12] == [("ann@8000", 1, 12_000), ("ann@10000", 1, 12_000), ("ann@12000", 1, 12_000)]
        assert got[12:] == [("ann@8000", 2, 12_000)]
        store = driver.get_window_store(browser_actions.STORE)
        assert store.fetch("ann", 8_000) == 2
        assert store.fetch("ann", 4_000) is None  # expired: retention is size + grace
        assert [start for start, _ in store.fetch("ann", 0, 20_000)] == [8_000, 10_000, 12_000]


def _iso(ms: int) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def test_click_sessions_dedupes_drops_invalid_and_emits_each_final_session_once() -> None:
    topology = click_sessions.topology("clicks", "sessions")
    config = StreamsConfig("sessions", default_value_serde=Serdes.json())
    with TopologyTestDriver(topology, config) as driver:
        clicks = driver.create_input_topic("clicks", Serdes.string(), Serdes.json())
        out = driver.create_output_topic("sessions", Serdes.string(), Serdes.json())

        def click(event_id: str, user: str, page: str, ms: int) -> None:
            value = {"event_id": event_id, "user_id": user, "page": page, "event_time": _iso(ms)}
            clicks.pipe_input(user, value, ms)

        click("e1", "u1", "/", 0)
        click("e2", "u1", "/menu", 30 * MIN)  # exactly the gap: same session
        click("e2", "u1", "/menu", 30 * MIN)  # a producer retry: counted once
        clicks.pipe_input("u1", {"event_id": "bad", "user_id": "u1", "event_time": _iso(MIN)}, MIN)  # no page
        click("e3", "u2", "/cart", 10 * MIN)
        assert out.is_empty()  # nothing has closed yet
        click("e4", "u1", "/", 200 * MIN)  # stream time passes 30 min + 30 min gap + 1 h grace
        finals = [(r.key, r.value) for r in out.read_records_to_list()]
        # emitted in (session end, key) order, as Kafka's suppression buffer evicts
        u1 = {"user_id": "u1", "session_start": 0, "session_end": 30 * MIN, "clicks": 2, "pages": 2}
        u2 = {"user_id": "u2", "session_start": 10 * MIN, "session_end": 10 * MIN, "clicks": 1, "pages": 1}
        assert finals == [("u2", u2), ("u1", u1)]
        sessions = driver.get_session_store(click_sessions.STORE)
        assert [(w.key, w.window.start, w.window.end) for w, _ in sessions.all()] == [
            ("u1", 0, 30 * MIN),
            ("u1", 200 * MIN, 200 * MIN),
            ("u2", 10 * MIN, 10 * MIN),
        ]
