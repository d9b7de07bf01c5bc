"""Run edge app instances as real processes and read what they produce (runtime end-to-end tests).

Each instance is ``python -m orchestration.cli.main edge run <app>`` with its own state dir and HTTP
port; tests kill them with SIGKILL/SIGTERM like an operator (or a crash) would.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, Producer

from edge.broker.embedded import free_port
from edge.kafka import KafkaClientConfig

ROOT = Path(__file__).resolve().parents[3]
APP = "tests.edge.runtime.apps.count_app"


class Instance:
    def __init__(
        self,
        client: KafkaClientConfig,
        *,
        app_id: str,
        state_dir: Path,
        in_topic: str,
        out_topic: str,
        attr: str = "counts",
        config: dict[str, Any] | None = None,
        log_dir: Path,
        name: str = "i",
    ) -> None:
        self.port = free_port()
        self.server = f"127.0.0.1:{self.port}"
        self.log_path = log_dir / f"{name}-{self.port}.log"
        cmd = [
            sys.executable,
            "-m",
            "orchestration.cli.main",
            "edge",
            "run",
            attr if ":" in attr else f"{APP}:{attr}",  # "module:attr" runs another app module
            "--application-id",
            app_id,
            "--bootstrap-servers",
            client.bootstrap_servers,
            "--state-dir",
            str(state_dir),
            "--server",
            self.server,
        ]
        for k, v in (config or {}).items():
            cmd += ["-c", f"{k}={v}"]
        env = {
            **os.environ,
            "EDGE_IN": in_topic,
            "EDGE_OUT": out_topic,
            "STREAMHOUSE_BROKER_PROFILE": client.profile.value,
            "PYTHONPATH": str(ROOT),
        }
        env.pop("STREAMHOUSE_BOOTSTRAP_SERVERS", None)
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=self._log, stderr=subprocess.STDOUT)

    # -- HTTP -----------------------------------------------------------------------------------------
    def get(self, path: str, timeout: float = 10) -> tuple[int, Any]:
        try:
            with urllib.request.urlopen(f"http://{self.server}{path}", timeout=timeout) as resp:
                body = resp.read()
                status = resp.status
        except urllib.error.HTTPError as exc:
            body, status = exc.read(), exc.code
        ctype_text = path.startswith("/metrics")
        return status, (body.decode() if ctype_text else json.loads(body))

    def health(self) -> dict[str, Any] | None:
        try:
            status, body = self.get("/health", timeout=2)
        except (OSError, ValueError):
            return None
        return body if status == 200 else None

    def wait_running(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"instance exited with {self.proc.returncode}:\n{self.log_tail()}")
            h = self.health()
            if h and h["state"] == "RUNNING" and not h["restoring"]:
                return
            time.sleep(0.1)
        raise AssertionError(f"instance not RUNNING after {timeout}s:\n{self.log_tail()}")

    def metadata(self) -> dict[str, Any]:
        return self.get("/v1/metadata")[1]

    def metric(self, name: str) -> float:
        _, text = self.get("/metrics")
        total = 0.0
        for line in text.splitlines():
            if line.startswith(name + "{") or line.startswith(name + " "):
                total += float(line.rsplit(" ", 1)[1])
        return total

    # -- process --------------------------------------------------------------------------------------
    def kill9(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def terminate(self, timeout: float = 15) -> int:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, signal.SIGTERM)
        return self.proc.wait(timeout)

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                self.terminate(10)
            except subprocess.TimeoutExpired:
                self.kill9()
        self._log.close()

    def log_tail(self, n: int = 40) -> str:
        self._log.flush()
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])


def wait_assignment(
    instances: Iterable[Instance], partitions: int, timeout: float = 60
) -> dict[str, list[int]]:
    """Wait until the live instances' metadata cover every partition exactly once."""
    instances = list(instances)
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            owned: dict[str, list[int]] = {}
            for inst in instances:
                h = inst.health()
                if not h or h["state"] != "RUNNING" or h["restoring"]:
                    raise ValueError("not running")
                md = inst.metadata()
                me = next(i for i in md["instances"] if i["local"])
                owned[inst.server] = sorted(p for ps in me["active"].values() for p in ps)
            flat = sorted(p for ps in owned.values() for p in ps)
            last = owned
            if flat == list(range(partitions)) and all(owned.values()):
                return owned
        except (ValueError, OSError, StopIteration, KeyError):
            pass
        time.sleep(0.2)
    raise AssertionError(f"assignment did not settle: {last}")


def produce(client: KafkaClientConfig, topic: str, records: Iterable[tuple[str, Any]]) -> int:
    p = Producer(client.producer(partitioner="murmur2_random", **{"linger.ms": 5}))
    n = 0
    for key, value in records:
        data = value if isinstance(value, bytes) else json.dumps(value).encode()
        p.produce(topic, data, key.encode())
        n += 1
        if n % 10000 == 0:
            p.poll(0)
    assert p.flush(30) == 0
    return n


class OutputReader:
    """Reads a topic from the beginning with its own group; keeps every (key, value) in order."""

    def __init__(self, client: KafkaClientConfig, topic: str, group: str, *, committed: bool = True) -> None:
        conf = client.consumer(group, **{"auto.offset.reset": "earliest", "enable.auto.commit": False})
        if committed:
            conf["isolation.level"] = "read_committed"
        self.consumer = Consumer(conf)
        self.consumer.subscribe([topic])
        self.records: list[tuple[str, int, float, int]] = []  # key, value, seen_at, partition
        self.headers: list[Any] = []

    def poll(self, seconds: float) -> int:
        deadline = time.monotonic() + seconds
        n = 0
        while time.monotonic() < deadline:
            for m in self.consumer.consume(1000, 0.2):
                if m.error() is not None:
                    if m.error().code() != KafkaError._PARTITION_EOF:
                        raise AssertionError(str(m.error()))
                    continue
                value = (
                    int.from_bytes(m.value(), "big", signed=True) if len(m.value() or b"") == 8 else m.value()
                )
                self.records.append(
                    (m.key().decode() if m.key() else None, value, time.monotonic(), m.partition())
                )
                self.headers.append(m.headers())
                n += 1
        return n

    def wait_for(self, predicate, timeout: float = 60, what: str = "outputs") -> None:  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate(self):
                return
            self.poll(0.3)
        raise AssertionError(f"timed out waiting for {what}; have {len(self.records)} records")

    def latest(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for key, value, _, _ in self.records:
            out[key] = value
        return out

    def maxima(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for key, value, _, _ in self.records:
            out[key] = max(out.get(key, 0), value)
        return out

    def close(self) -> None:
        self.consumer.close()


def keyed(n: int, keys: int, start: int = 0) -> list[tuple[str, int]]:
    return [(f"k{i % keys}", i) for i in range(start, start + n)]


def expected_counts(*batches: list[tuple[str, int]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for batch in batches:
        for key, _ in batch:
            out[key] = out.get(key, 0) + 1
    return out
