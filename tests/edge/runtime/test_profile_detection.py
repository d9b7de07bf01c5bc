"""Without ``broker.profile`` the runtime asks the cluster which client tuning it needs.

Before, an app that named no profile got the embedded broker's tuning (a 2 s session, range assignment)
on any cluster; a Kafka Streams user's properties against a real cluster needed ``broker.profile=real``.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from edge import Consumed, Serdes, StreamsBuilder
from edge.broker.local import BrokerKind, broker_kind_from_env
from edge.kafka import BrokerProfile
from edge.kafka import profile as profile_module
from edge.kafka.profile import detect_profile
from edge.runtime import StreamsApp
from edge.runtime.config import StreamsConfig


def _expected() -> BrokerProfile:
    """The session broker: Tansu in the main pass, Apache Kafka in the second."""
    return BrokerProfile.REAL if broker_kind_from_env() is BrokerKind.KAFKA else BrokerProfile.EMBEDDED


@pytest.mark.broker
def test_the_cluster_says_which_profile_it_needs(kafka_broker):
    assert detect_profile(kafka_broker.bootstrap_servers) is _expected()


def test_an_unreachable_cluster_gets_kafkas_defaults():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nobody listens here once the socket closes
    assert detect_profile(f"127.0.0.1:{port}", timeout_s=1) is BrokerProfile.REAL


def test_a_named_profile_is_never_second_guessed(monkeypatch):
    def fail(*_args, **_kwargs):
        raise AssertionError("asked the cluster although the profile was named")

    monkeypatch.setattr("edge.runtime.config.detect_profile", fail)
    for named in ("embedded", "real"):
        cfg = StreamsConfig.from_mapping(
            {"application.id": "a", "bootstrap.servers": "h:1", "broker.profile": named}
        )
        assert cfg.client().profile is BrokerProfile(named)
    auto = StreamsConfig.from_mapping(
        {"application.id": "a", "bootstrap.servers": "h:1", "broker.profile": "auto"}
    )
    assert auto.broker_profile is None


@pytest.mark.broker
@pytest.mark.timeout(90)
def test_an_app_without_a_profile_runs_with_the_clusters(
    kafka_broker, make_topic, unique_name, tmp_path: Path, monkeypatch
):
    asked: list[str] = []
    real_detect = profile_module.detect_profile

    def counting(servers: str, *args, **kwargs):
        asked.append(servers)
        return real_detect(servers, *args, **kwargs)

    monkeypatch.setattr("edge.runtime.config.detect_profile", counting)
    builder = StreamsBuilder()
    builder.stream(make_topic("in", 1), Consumed.with_(Serdes.string(), Serdes.string())).peek(
        lambda k, v: None
    )
    app = StreamsApp(
        builder.build(),
        {
            "application.id": unique_name("app"),
            "bootstrap.servers": kafka_broker.bootstrap_servers,
            "state.dir": str(tmp_path),
            "http.enabled": "false",
        },
    )
    app.start()
    try:
        assert app.wait_until_running(60)
        assert app.client.profile is _expected()
        assert asked == [kafka_broker.bootstrap_servers]  # once, however many clients
    finally:
        app.close(30)
