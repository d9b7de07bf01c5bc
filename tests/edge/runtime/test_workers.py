"""An instance with N stream workers (processes): every core, one address.

Before, ``num.stream.threads`` was not supported and one instance used one core. Now ``streamhouse edge
run --workers N`` (or ``num.stream.threads=N``) runs N group members as processes behind the instance's
``application.server``: health of the whole instance, merged metrics, queries answered by whichever
worker hosts the key.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from confluent_kafka import Producer

from edge.runtime.workers import StreamWorkers, merge_metrics

ROOT = Path(__file__).resolve().parents[3]


def test_metrics_of_the_workers_merge_into_one_exposition():
    worker = """# HELP records_total Records processed.
# TYPE records_total counter
records_total{task="0_0"} 5
records_total{task="0_1"} 7
# HELP up Up.
# TYPE up gauge
up 1
"""
    merged = merge_metrics([(0, worker), (1, worker.replace(" 5", " 6"))])
    lines = merged.splitlines()
    assert lines.count("# TYPE records_total counter") == 1 and lines.count("# TYPE up gauge") == 1
    assert lines[:6] == [
        "# HELP records_total Records processed.",
        "# TYPE records_total counter",
        'records_total{worker="0",task="0_0"} 5',
        'records_total{worker="0",task="0_1"} 7',
        'records_total{worker="1",task="0_0"} 6',
        'records_total{worker="1",task="0_1"} 7',
    ]
    assert lines[-2:] == ['up{worker="0"} 1', 'up{worker="1"} 1']


def test_the_instance_is_not_healthy_before_its_workers_are_spawned(tmp_path: Path):
    """The front answers as soon as it is up; until every worker exists, /health says 503 STARTING (a
    200 with no workers listed once let a waiting client go on too early)."""
    supervisor = StreamWorkers(
        "tests.replay.apps:wordcount", {"application.id": "wc", "state.dir": str(tmp_path)}, 2
    )
    status, body = supervisor.health()
    assert (status, body) == (503, {"state": "STARTING", "status": "OK", "reasons": [], "workers": []})


def _get(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.broker
@pytest.mark.slow
@pytest.mark.timeout(240)
def test_two_workers_share_the_partitions_behind_one_address(kafka_broker, make_topic, unique_name, tmp_path):
    source, sink = make_topic("lines", 2), make_topic("counts", 2)
    port = _free_port()
    env = {**os.environ, "REPLAY_IN": source, "REPLAY_OUT": sink}
    env = {k: v for k, v in env.items() if k != "STREAMHOUSE_BROKER_PROFILE"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "orchestration.cli.main", "edge", "run", "tests.replay.apps:wordcount",
         "--application-id", unique_name("wc"), "--bootstrap-servers", kafka_broker.bootstrap_servers,
         "--state-dir", str(tmp_path / "state"), "--server", f"127.0.0.1:{port}",
         "-c", "num.stream.threads=2", "-c", "commit.interval.ms=200"],
        cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    front = f"http://127.0.0.1:{port}"
    try:
        producer = Producer(kafka_broker.producer(partitioner="murmur2_random"))
        words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
        for i, word in enumerate(words):
            producer.produce(source, f"{word} {word}".encode(), str(i).encode())
        assert producer.flush(10) == 0
        deadline = time.monotonic() + 150
        health: dict = {}
        while time.monotonic() < deadline:
            with_status = _get(f"{front}/health") if _listening(port) else (0, {})
            status, health = with_status
            if status == 200 and health.get("state") == "RUNNING":
                break
            time.sleep(0.5)
        assert health.get("state") == "RUNNING", health
        workers = health["workers"]
        assert [w["worker"] for w in workers] == [0, 1] and len({w["pid"] for w in workers}) == 2
        assert len({w["instance"] for w in workers}) == 2  # two group members with their own identity
        # nothing wrong with the cluster: each worker and the instance say OK (DEGRADED + reasons when
        # partitions lack a leader: tests/foundation/test_kafka_cluster.py)
        assert (health["status"], health["reasons"]) == ("OK", [])
        assert [(w["status"], w["reasons"]) for w in workers] == [("OK", [])] * 2
        # every key answers through the one address, whichever worker hosts it
        for word in words:
            answer: dict = {}
            while time.monotonic() < deadline:
                status, answer = _get(f"{front}/v1/stores/counts-store/keys/{word}")
                if status == 200 and answer.get("value") == 2:
                    break
                time.sleep(0.3)
            assert answer.get("value") == 2, (word, answer)
        # both workers hold tasks: under cooperative rebalancing the second worker gets its share in the
        # rebalance after the first one's revocation, which may settle after every key has answered
        hosting: list = []
        while time.monotonic() < deadline:
            _, metadata = _get(f"{front}/v1/metadata")
            hosting = [i for i in metadata["instances"] if i.get("partitions") or i.get("active")]
            if len(hosting) == 2:
                break
            time.sleep(0.5)
        assert len(hosting) == 2, metadata
        with urllib.request.urlopen(f"{front}/metrics", timeout=10) as response:
            metrics = response.read().decode()
        assert 'worker="0"' in metrics and 'worker="1"' in metrics
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err[-3000:]
    assert "running as 2 workers" in err
    for w in workers:
        with pytest.raises(ProcessLookupError):
            os.kill(w["pid"], 0)


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def _start(kafka_broker, make_topic, unique_name, tmp_path, *extra: str) -> tuple[subprocess.Popen, str]:
    source, sink = make_topic("lines", 2), make_topic("counts", 2)
    port = _free_port()
    env = {**os.environ, "REPLAY_IN": source, "REPLAY_OUT": sink}
    proc = subprocess.Popen(
        [sys.executable, "-m", "orchestration.cli.main", "edge", "run", "tests.replay.apps:wordcount",
         "--application-id", unique_name("wc"), "--bootstrap-servers", kafka_broker.bootstrap_servers,
         "--state-dir", str(tmp_path / "state"), "--server", f"127.0.0.1:{port}", "--workers", "2", *extra],
        cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    return proc, f"http://127.0.0.1:{port}"


def _wait_health(front: str, predicate, timeout: float = 150) -> dict:
    port = int(front.rsplit(":", 1)[1])
    deadline = time.monotonic() + timeout
    health: dict = {}
    while time.monotonic() < deadline:
        if _listening(port):
            status, health = _get(f"{front}/health")
            if predicate(status, health):
                return health
        time.sleep(0.5)
    raise AssertionError(f"instance health never matched: {health}")


@pytest.mark.broker
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_killed_worker_is_replaced_under_replace_thread_and_stops_the_instance_otherwise(
    kafka_broker, make_topic, unique_name, tmp_path
):
    for response, expect_code in (("replace_thread", None), ("shutdown_client", 1)):
        proc, front = _start(
            kafka_broker,
            make_topic,
            unique_name,
            tmp_path / response,
            "-c",
            f"uncaught.exception.response={response}",
        )
        try:
            health = _wait_health(front, lambda s, h: s == 200)
            victim = health["workers"][1]["pid"]
            os.kill(victim, signal.SIGKILL)
            if expect_code is None:
                health = _wait_health(
                    front,
                    lambda s, h, victim=victim: (
                        s == 200 and h["workers"][1]["restarts"] == 1 and h["workers"][1]["pid"] != victim
                    ),
                )
                assert proc.poll() is None
                proc.send_signal(signal.SIGTERM)
                _, err = proc.communicate(timeout=90)
                assert proc.returncode == 0, err[-2000:]
                assert "replacing it (replace_thread)" in err
            else:
                _, err = proc.communicate(timeout=120)
                assert proc.returncode == expect_code, err[-2000:]
                assert "stopping the instance (shutdown_client)" in err
        finally:
            if proc.poll() is None:
                proc.kill()
