"""Client settings as Kafka Streams takes them: a Java app's properties run unchanged.

Before, an unprefixed client setting (``session.timeout.ms``, ``acks``) or any setting the edge did not
know stopped the app with "unknown streams setting"; now each goes to the clients it fits, prefixed ones
to their client type, and unknown ones are logged (with the closest known name) and ignored.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer

from edge import Consumed, Produced, Serdes, StreamsBuilder
from edge.dsl.windows import JoinWindows
from edge.runtime import StreamsApp
from edge.runtime.app import GROUPED_FETCH_WAIT_MS, RESTORE_FETCH_WAIT_MS
from edge.runtime.client_settings import client_scope, sort_settings
from edge.runtime.config import StreamsConfig, StreamsConfigError
from tests.edge.runtime.harness import OutputReader

BASE = {"application.id": "smoke", "bootstrap.servers": "127.0.0.1:9092"}

#: the settings Kafka's streams smoke test gives its app (tests/kafkatest/services/streams.py and
#: SmokeTestClient), unprefixed client settings and Kafka Streams settings the edge does not apply
SMOKE_TEST_PROPERTIES = {
    "processing.guarantee": "at_least_once",
    "num.stream.threads": "3",
    "replication.factor": "1",
    "num.standby.replicas": "2",
    "buffered.records.per.partition": "100",
    "commit.interval.ms": "1000",
    "auto.offset.reset": "earliest",
    "acks": "all",
    "acceptable.recovery.lag": "9223372036854775807",
    "max.warmup.replicas": "2",
    "probing.rebalance.interval.ms": "60000",
    "session.timeout.ms": "10000",
    "windowstore.changelog.additional.retention.ms": "60000",
}


def test_the_smoke_test_properties_are_taken_unchanged(caplog: pytest.LogCaptureFixture):
    with caplog.at_level(logging.WARNING, logger="edge.runtime.client_settings"):
        cfg = StreamsConfig.from_mapping({**BASE, **SMOKE_TEST_PROPERTIES})
    assert cfg.commit_interval_ms == 1000 and cfg.num_standby_replicas == 2
    assert cfg.buffered_records_per_partition == 100
    assert cfg.windowstore_changelog_additional_retention_ms == 60_000
    assert cfg.client_overrides("main.consumer") == {
        "auto.offset.reset": "earliest",
        "session.timeout.ms": "10000",
    }
    assert cfg.client_overrides("restore.consumer") == cfg.client_overrides("main.consumer")
    assert cfg.client_overrides("producer") == {"acks": "all"}
    assert cfg.client_overrides("admin") == {}
    ignored = {r.getMessage().split("'")[1] for r in caplog.records}
    assert ignored == {"num.stream.threads"}
    # KIP-441's settings are applied (edge.runtime.warmup)
    assert cfg.acceptable_recovery_lag == 9223372036854775807 and cfg.max_warmup_replicas == 2
    assert cfg.probing_rebalance_interval_ms == 60_000


def test_prefixed_settings_win_over_unprefixed_ones_for_their_client_only():
    cfg = StreamsConfig.from_mapping(
        {
            **BASE,
            "max.poll.interval.ms": "100000",
            "consumer.max.poll.interval.ms": "200000",
            "main.consumer.max.poll.interval.ms": "300000",
            "restore.consumer.fetch.max.wait.ms": "50",  # the Java name, translated for librdkafka
            "producer.linger.ms": "20",
            "admin.request.timeout.ms": "7000",
            "security.protocol": "PLAINTEXT",  # fits every client
        }
    )
    assert cfg.client_overrides("main.consumer")["max.poll.interval.ms"] == "300000"
    assert cfg.client_overrides("global.consumer")["max.poll.interval.ms"] == "200000"
    assert cfg.client_overrides("restore.consumer")["fetch.wait.max.ms"] == "50"
    assert "fetch.wait.max.ms" not in cfg.client_overrides("main.consumer")
    assert cfg.client_overrides("producer") == {"linger.ms": "20", "security.protocol": "PLAINTEXT"}
    assert cfg.client_overrides("admin") == {"request.timeout.ms": "7000", "security.protocol": "PLAINTEXT"}
    assert cfg.client().admin()["request.timeout.ms"] == "7000"


def test_unknown_settings_are_warned_with_the_closest_name_and_ignored(caplog: pytest.LogCaptureFixture):
    with caplog.at_level(logging.WARNING, logger="edge.runtime.client_settings"):
        cfg = StreamsConfig.from_mapping(
            {
                **BASE,
                "procesing.guarantee": "exactly_once_v2",
                "sesion.timeout.ms": "6000",
                "key.serializer": "org.apache.kafka.common.serialization.StringSerializer",
                "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required;",
                "enable.auto.commit": "true",
            }
        )
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "did you mean 'processing.guarantee'?" in text and "did you mean 'session.timeout.ms'?" in text
    assert "'key.serializer' was supplied but is ignored: a Java-only client setting" in text
    assert "set sasl.username and sasl.password instead" in text
    assert "'enable.auto.commit' was supplied but is ignored: the runtime sets it" in text
    assert cfg.processing_guarantee == "at_least_once" and cfg.client_overrides("main.consumer") == {}


def test_an_invalid_value_of_a_known_client_setting_fails_naming_it():
    with pytest.raises(StreamsConfigError, match="acks='banana': Invalid value"):
        StreamsConfig.from_mapping({**BASE, "acks": "banana"})
    with pytest.raises(StreamsConfigError, match=r"session\.timeout\.ms='soon'"):
        StreamsConfig.from_mapping({**BASE, "main.consumer.session.timeout.ms": "soon"})


def test_librdkafka_says_which_client_a_setting_fits():
    assert client_scope("session.timeout.ms", "6000") == ("consumer",)
    assert client_scope("linger.ms", "5") == ("producer",)
    assert client_scope("security.protocol", "PLAINTEXT") == ("consumer", "producer", "admin")
    assert client_scope("no.such.setting", "1") is None
    owned = sort_settings({"isolation.level": "read_committed"}, [], exactly_once=True)
    assert owned.layers == {} and owned.ignored[0][0] == "isolation.level"


@pytest.mark.broker
@pytest.mark.timeout(120)
def test_an_unprefixed_setting_reaches_the_main_consumer_and_a_prefixed_one_wins(
    kafka_broker, make_topic, unique_name, tmp_path: Path
):
    """Observable end to end: ``auto.offset.reset=latest`` unprefixed makes a new app skip what its input
    held before it started; ``main.consumer.auto.offset.reset=earliest`` beside it reads it all."""
    source = make_topic("in", 1)
    producer = Producer(kafka_broker.producer())
    for i in range(5):
        producer.produce(source, f"old-{i}".encode(), b"k")
    assert producer.flush(10) == 0

    def outputs(name: str, extra: dict[str, str]) -> list[str]:
        """Run a relay with ``extra`` until a record produced after its start comes out; its outputs."""
        app_id, sink = unique_name(name), make_topic(f"{name}-out", 1)
        builder = StreamsBuilder()
        builder.stream(source, Consumed.with_(Serdes.string(), Serdes.string())).to(
            sink, Produced.with_(Serdes.string(), Serdes.string())
        )
        config = {
            "application.id": app_id,
            "bootstrap.servers": kafka_broker.bootstrap_servers,
            "broker.profile": kafka_broker.profile.value,
            "state.dir": str(tmp_path / app_id),
            "http.enabled": "false",
            "commit.interval.ms": "100",
        }
        app = StreamsApp(builder.build(), {**config, **extra})
        reader = OutputReader(kafka_broker, sink, unique_name(f"{name}-reader"), committed=False)
        app.start()
        try:
            assert app.wait_until_running(60)
            deadline = time.monotonic() + 60
            while b"new" not in [r[1] for r in reader.records]:
                assert time.monotonic() < deadline, "no record produced after the start came out"
                producer.produce(source, b"new", b"k")  # until the consumer's position is set
                producer.flush(10)
                reader.poll(0.2)
        finally:
            app.close(30)
        reader.poll(0.5)
        values = [r[1].decode() for r in reader.records]
        reader.close()
        return values

    skipped = outputs("latest", {"auto.offset.reset": "latest"})
    assert not [v for v in skipped if v.startswith("old")] and skipped
    read_all = outputs(
        "earliest", {"auto.offset.reset": "latest", "main.consumer.auto.offset.reset": "earliest"}
    )
    assert read_all[:5] == [f"old-{i}" for i in range(5)]


SMOKE_TEST_PROPERTIES_FILE = """\
# Kafka Streams' smoke-test settings, as a Java app's streams.properties would hold them
processing.guarantee=at_least_once
num.stream.threads=3
replication.factor=1
num.standby.replicas=0
buffered.records.per.partition=100
commit.interval.ms=200
auto.offset.reset: earliest
acks = all
acceptable.recovery.lag=9223372036854775807
max.warmup.replicas=2
probing.rebalance.interval.ms=60000
session.timeout.ms=10000
windowstore.changelog.additional.retention.ms=60000
producer.linger.ms=\\
  5
"""


@pytest.mark.broker
@pytest.mark.slow
@pytest.mark.timeout(180)
def test_a_kafka_streams_properties_file_runs_unchanged(
    kafka_broker, make_topic, unique_name, tmp_path: Path
):
    """``streamhouse edge run --properties`` with the smoke test's settings: it runs, counts, says what
    it ignored, and stops cleanly on SIGTERM."""
    import os
    import signal
    import subprocess
    import sys

    source, sink = make_topic("lines", 1), make_topic("counts", 1)
    properties = tmp_path / "streams.properties"
    properties.write_text(
        SMOKE_TEST_PROPERTIES_FILE
        + f"bootstrap.servers={kafka_broker.bootstrap_servers}\napplication.id={unique_name('smoke')}\n"
        + f"state.dir={tmp_path / 'state'}\n"
    )
    env = {**os.environ, "REPLAY_IN": source, "REPLAY_OUT": sink, "STREAMHOUSE_STATE_DIR": str(tmp_path)}
    env = {k: v for k, v in env.items() if not k.startswith("STREAMHOUSE_BROKER_PROFILE")}
    root = Path(__file__).resolve().parents[3]
    proc = subprocess.Popen(
        [sys.executable, "-m", "orchestration.cli.main", "edge", "run", "tests.replay.apps:wordcount",
         "--properties", str(properties), "-c", "http.enabled=false"],
        cwd=root, env=env, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    reader = OutputReader(kafka_broker, sink, unique_name("reader"), committed=False)
    try:
        producer = Producer(kafka_broker.producer())
        producer.produce(source, b"to be or not to be", b"k")
        assert producer.flush(10) == 0
        reader.wait_for(lambda r: {k for k, *_ in r.records} >= {"to", "be", "or", "not"}, 90, "word counts")
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        reader.close()
    assert proc.returncode == 0, err[-3000:]
    assert "running as 3 workers" in err  # num.stream.threads=3: three worker processes
    for applied in ("acceptable.recovery.lag", "max.warmup.replicas", "probing.rebalance.interval.ms"):
        assert f"the configuration '{applied}' was supplied but is ignored" not in err
    assert "unknown streams setting" not in err and "Traceback" not in err


@pytest.mark.broker
def _real_profile_config(kafka_broker, unique_name, tmp_path: Path) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """A fresh app's settings under the real-cluster profile (no embedded-broker fetch defaults)."""
    app_id = unique_name("app")
    return {
        "application.id": app_id,
        "bootstrap.servers": kafka_broker.bootstrap_servers,
        "broker.profile": "real",
        "state.dir": str(tmp_path / app_id),
        "http.enabled": "false",
    }


@pytest.mark.timeout(120)
def test_the_restore_consumer_does_not_wait_at_a_changelogs_end_unless_told_to(
    kafka_broker, make_topic, unique_name, tmp_path: Path
):
    """A restore reads to partition EOF: with a real cluster's default ``fetch.wait.max.ms`` (500 ms) every
    restore's last fetch waited half a second for records that were not coming. A user's setting wins."""
    source = make_topic("in", 1)
    builder = StreamsBuilder()
    builder.stream(source, Consumed.with_(Serdes.string(), Serdes.string())).to(
        make_topic("out", 1), Produced.with_(Serdes.string(), Serdes.string())
    )
    topology = builder.build()
    for extra, want in (({}, RESTORE_FETCH_WAIT_MS), ({"restore.consumer.fetch.max.wait.ms": "50"}, 50)):
        app = StreamsApp(topology, {**_real_profile_config(kafka_broker, unique_name, tmp_path), **extra})
        app.start()
        try:
            assert int(app.reader._conf["fetch.wait.max.ms"]) == want
            # the standby consumer tails its changelogs: it keeps the broker's long poll (or the user's)
            assert app._aux_consumer_conf("standby").get("fetch.wait.max.ms") == ("50" if extra else None)
        finally:
            app.close(30)


@pytest.mark.timeout(120)
def test_a_task_reading_several_partitions_does_not_refetch_behind_a_long_poll(
    kafka_broker, make_topic, unique_name, tmp_path: Path
):
    """A join's task pauses a partition that buffers too much, and librdkafka drops what it prefetched for
    it: the fetch after the resume waited behind the broker's long poll (500 ms on a real cluster), which
    made a join catching up 3x slower. Such apps' main consumer waits 100 ms unless the user says
    otherwise; apps whose tasks read one partition keep the broker's default."""
    left, right = make_topic("left", 1), make_topic("right", 1)
    joined = StreamsBuilder()
    consumed = Consumed.with_(Serdes.string(), Serdes.string())
    joined.stream(left, consumed).join(
        joined.stream(right, consumed), lambda a, b: a + b, JoinWindows.of_time_difference_with_no_grace(1000)
    ).to(make_topic("joined", 1), Produced.with_(Serdes.string(), Serdes.string()))
    single = StreamsBuilder()
    single.stream(left, consumed).to(make_topic("copy", 1), Produced.with_(Serdes.string(), Serdes.string()))
    cases = (
        (joined, {}, GROUPED_FETCH_WAIT_MS),
        (joined, {"main.consumer.fetch.max.wait.ms": "300"}, "300"),
        (joined, {"fetch.max.wait.ms": "250"}, "250"),
        (single, {}, None),
    )
    for builder, extra, want in cases:
        config = _real_profile_config(kafka_broker, unique_name, tmp_path)
        app = StreamsApp(builder.build(), {**config, **extra})
        app.start()
        try:
            assert app._main_conf.get("fetch.wait.max.ms") == want, (
                extra,
                app._main_conf.get("fetch.wait.max.ms"),
            )
        finally:
            app.close(30)


def test_the_join_index_budget_is_a_setting_and_refuses_a_negative_one():
    cfg = StreamsConfig.from_mapping(
        {"join.index.max.bytes": "0"}, application_id="app", bootstrap_servers="127.0.0.1:9"
    )
    assert cfg.join_index_max_bytes == 0
    default = StreamsConfig.from_mapping({}, application_id="app", bootstrap_servers="127.0.0.1:9")
    assert default.join_index_max_bytes == 16 * 1024 * 1024
    with pytest.raises(StreamsConfigError, match=r"join\.index\.max\.bytes"):
        StreamsConfig.from_mapping(
            {"join.index.max.bytes": "-1"}, application_id="app", bootstrap_servers="127.0.0.1:9"
        )
