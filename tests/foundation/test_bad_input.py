"""Nonsense settings get one ``error:`` line and exit 2 from the CLI, never a stack trace or a hang.

Each case was found by probing from outside: every one of them used to print a traceback, hang, or be
accepted as a value nobody could mean.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from edge.runtime.config import StreamsConfig, StreamsConfigError
from orchestration.settings import SettingsError, load_settings

ROOT = Path(__file__).resolve().parents[2]


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[bytes]:
    """The console script in a child with ``env`` added (bytes: some values are not UTF-8)."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("STREAMHOUSE_")}
    environ.update(env)
    return subprocess.run(
        [sys.executable, "-m", "orchestration.cli.main", *(args or ("topics", "list"))],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("env", "said"),
    [
        ({"STREAMHOUSE_KAFKA__ACKS": "banana"}, "acks='banana': Invalid value for configuration property"),
        ({"STREAMHOUSE_KAFKA__NO_SUCH_PROP": "1"}, "No such configuration property"),
        ({"STREAMHOUSE_LAG_MAX_WAIT_S": "1e999"}, "lag_max_wait_s: Input should be a finite number"),
        (
            {"STREAMHOUSE_LAG_MAX_WAIT_S": "1e9"},
            "less than or equal to 86400",
        ),
        ({"STREAMHOUSE_CONFIG": "/dev/zero"}, "/dev/zero: not a regular file"),
    ],
)
def test_bad_settings_are_one_line_errors(env, said):
    done = _cli(env)
    err = done.stderr.decode()
    assert done.returncode == 2, err
    assert err.strip().splitlines() == [err.strip()] and err.startswith("error: ") and said in err, err


def test_a_non_utf8_path_setting_is_named():
    environ = {k: v for k, v in os.environb.items() if not k.startswith(b"STREAMHOUSE_")}
    environ[b"STREAMHOUSE_LAKE_ROOT"] = b"/tmp/lake-\xff\xfe"
    done = subprocess.run(
        [sys.executable, "-m", "orchestration.cli.main", "topics", "list"],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        timeout=60,
    )
    err = done.stderr.decode("utf-8", "replace")
    assert (
        done.returncode == 2 and err.startswith("error: STREAMHOUSE_LAKE_ROOT=") and "not valid UTF-8" in err
    )
    assert "Traceback" not in err


def test_a_huge_config_file_is_refused_without_reading_it_all(tmp_path):
    big = tmp_path / "streamhouse.yaml"
    with big.open("wb") as handle:
        handle.truncate(64 * 1024 * 1024)  # sparse: 64 MiB of zeros
    with pytest.raises(SettingsError, match="larger than 1024 KiB"):
        load_settings({"STREAMHOUSE_CONFIG": str(big)})
    (tmp_path / "bin.yaml").write_bytes(b"lake_root: \xff\xfe\n")
    with pytest.raises(SettingsError, match="not UTF-8 text"):
        load_settings({"STREAMHOUSE_CONFIG": str(tmp_path / "bin.yaml")})


def test_valid_kafka_properties_still_pass():
    settings = load_settings(
        {"STREAMHOUSE_KAFKA__ACKS": "all", "STREAMHOUSE_KAFKA__SESSION_TIMEOUT_MS": "6000"},
        config_file=None,
    )
    assert settings.kafka == {"acks": "all", "session.timeout.ms": "6000"}


@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        ("commit.interval.ms", "1000000000000000000000000000000", "at most 9223372036854775807"),
        ("commit.interval.ms", "1e30", "must be an integer"),
        ("num.standby.replicas", str(2**31), "at most 2147483647"),
    ],
)
def test_runtime_numbers_kafka_could_not_hold_are_refused(key, value, said):
    with pytest.raises(StreamsConfigError, match=said):
        StreamsConfig.from_mapping({"application.id": "a", "bootstrap.servers": "127.0.0.1:9092", key: value})
    ok = StreamsConfig.from_mapping(
        {"application.id": "a", "bootstrap.servers": "127.0.0.1:9092", "commit.interval.ms": str(2**63 - 1)}
    )
    assert ok.commit_interval_ms == 2**63 - 1


@pytest.mark.broker
def test_topics_produce_sends_binary_lines_as_they_are_and_refuses_an_empty_separator(
    kafka_broker, make_topic
):
    from confluent_kafka import Consumer, TopicPartition

    topic = make_topic("bytes", 1)
    servers = ["--bootstrap-servers", kafka_broker.bootstrap_servers]
    env = {"STREAMHOUSE_BROKER_PROFILE": kafka_broker.profile.value, "STREAMHOUSE_BOOTSTRAP_SERVERS": ""}
    env = {k: v for k, v in env.items() if v}
    lines = b"plain\nlatin-1 caf\xe9\n\xff\xfe\x00binary\nk\xff:v\xfe\n"
    produce = ["topics", "produce", topic, "--key-separator", ":", *servers]
    done = subprocess.run(
        [sys.executable, "-m", "orchestration.cli.main", *produce],
        cwd=ROOT, env={**os.environ, **env}, input=lines, capture_output=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0 and b"sent 4 records" in done.stderr, done.stderr
    consumer = Consumer(kafka_broker.consumer("bad-input-reader", **{"auto.offset.reset": "earliest"}))
    consumer.assign([TopicPartition(topic, 0, 0)])
    got = [(m.key(), m.value()) for m in consumer.consume(4, 10)]
    consumer.close()
    assert got == [
        (None, b"plain"), (None, b"latin-1 caf\xe9"), (None, b"\xff\xfe\x00binary"), (b"k\xff", b"v\xfe"),
    ]  # fmt: skip
    empty = _cli(env, "topics", "produce", topic, "--key-separator", "", *servers)
    assert empty.returncode == 2 and b"--key-separator" in empty.stderr and b"Traceback" not in empty.stderr
