"""Exactly-once on a broker that shows aborted records must say so at start."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest

from edge.kafka.probe import broker_hides_aborted_records
from edge.runtime import StreamsApp

pytestmark = [pytest.mark.slow, pytest.mark.broker, pytest.mark.timeout(120)]


def test_exactly_once_start_warns_when_the_broker_shows_aborted_records(
    kafka_broker, make_topic, unique_name, tmp_path: Path, monkeypatch, caplog
) -> None:
    src, out = make_topic("in", 1), make_topic("out", 1)
    monkeypatch.setenv("EDGE_IN", src)
    monkeypatch.setenv("EDGE_OUT", out)
    from tests.edge.runtime.apps.count_app import counts

    hides = broker_hides_aborted_records(kafka_broker)
    app = StreamsApp(
        counts,
        {
            "application.id": unique_name("app"),
            "bootstrap.servers": kafka_broker.bootstrap_servers,
            "broker.profile": kafka_broker.profile.value,
            "state.dir": str(tmp_path),
            "processing.guarantee": "exactly_once_v2",
            "http.enabled": "false",
        },
    )
    caplog.set_level(logging.WARNING, logger="edge.runtime.app")
    app.start()
    try:
        deadline = time.monotonic() + 60
        while app.broker_hides_aborted is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert app.broker_hides_aborted is hides
        warned = [r for r in caplog.records if "exactly-once is weaker" in r.getMessage()]
        assert bool(warned) is (not hides), [r.getMessage() for r in caplog.records]
        if warned:
            assert "restore after a crash may apply an aborted changelog write" in warned[0].getMessage()
    finally:
        app.close(20)
