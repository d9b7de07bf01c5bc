"""An instance with N stream workers, as processes: Kafka Streams' ``num.stream.threads`` for CPython.

A Kafka Streams instance runs ``num.stream.threads`` stream threads, each a consumer-group member with
its own tasks. CPython threads share one core (the GIL), so here each worker is a process: one group
member with its own tasks, state directory (``<state.dir>/<application.id>/workers/<i>``, so a reset of
the app removes them with the rest) and query server. The instance keeps one address for users:
its ``application.server`` is served by this supervisor, which

* answers ``/health`` for the whole instance (every worker's state; 200 only when all answer),
* merges the workers' ``/metrics`` into one exposition, each sample labelled ``worker="i"``,
* passes every other request (interactive queries) to a live worker, which answers it or forwards it
  to the worker or instance hosting the key, as between instances.

A worker that fails is replaced when ``uncaught.exception.response`` is ``replace_thread`` (Kafka's
REPLACE_THREAD); otherwise the instance stops (SHUTDOWN_CLIENT). A fenced worker (exit 3) stops the
instance with status 3. SIGTERM/SIGINT stop every worker gracefully.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from edge.errors import StreamhouseError
from edge.iq.http import LOOPBACK_NAMES, AllowedHosts, BoundedHTTPServer, RateLimitedLog
from edge.paths import check_application_id
from edge.runtime.instance import EXIT_FAILED, EXIT_FENCED, EXIT_OK
from edge.runtime.statedir import StateDirLockedError, lock_state_dir, unlock_state_dir
from edge.runtime.worker import READY_PREFIX

log = logging.getLogger(__name__)

#: a stopped worker that has not exited after this long is killed
STOP_TIMEOUT_S = 45.0


class WorkersError(StreamhouseError):
    """The instance's workers could not be started (bad count, state directory in use, ...)."""


@dataclass
class Worker:
    """One worker process and what it said when it started."""

    index: int
    process: subprocess.Popen[str]
    server: str | None = None
    instance: str | None = None
    ready: threading.Event = field(default_factory=threading.Event)
    restarts: int = 0
    #: its exit was dealt with (replaced, or the instance stopped)
    handled: bool = False


class StreamWorkers:
    """Run ``app_spec`` (``MODULE:ATTR``) as ``workers`` processes behind one ``application.server``."""

    def __init__(
        self, app_spec: str, config: Mapping[str, Any], workers: int, *, log_level: str = "INFO"
    ) -> None:
        if workers < 1:
            raise WorkersError(f"the number of stream workers must be at least 1, got {workers}")
        self.app_spec = app_spec
        self.config = dict(config)
        self.count = workers
        self.log_level = log_level
        self.application_id = check_application_id(str(self.config.get("application.id", "")))
        self.app_dir = Path(str(self.config.get("state.dir", ".state/streams"))) / self.application_id
        self.replace_failed = str(self.config.get("uncaught.exception.response", "")) == "replace_thread"
        host, _, port = str(self.config.get("application.server", "127.0.0.1:0")).rpartition(":")
        self.host = host or "127.0.0.1"
        self.port = int(port or 0)
        self.bind_host = str(self.config.get("http.bind.host", "127.0.0.1"))
        self.workers: list[Worker] = []
        self.exit_code: int | None = None
        self._stopping = threading.Event()
        self._lock_fd: int | None = None
        self._front: BoundedHTTPServer | None = None
        self._next = 0

    # -- lifecycle ------------------------------------------------------------------------------------
    def start(self) -> None:
        """Lock the app's state directory, start the workers and the instance's query server."""
        self.app_dir.mkdir(parents=True, exist_ok=True)
        try:
            self._lock_fd = lock_state_dir(self.app_dir, self.application_id)
        except StateDirLockedError as exc:
            raise WorkersError(str(exc)) from None
        self._front = self._serve_front()
        self.workers = [self._spawn(i) for i in range(self.count)]

    @property
    def advertised_server(self) -> str:
        assert self._front is not None
        return f"{self.host}:{self._front.server_address[1]}"

    def request_shutdown(self) -> None:
        """Ask every worker to stop (SIGTERM: each commits, closes its stores, leaves the group)."""
        self._stopping.set()
        for worker in self.workers:
            with contextlib.suppress(ProcessLookupError):
                worker.process.send_signal(signal.SIGTERM)

    def run(self) -> int:
        """Supervise until every worker has exited; the instance's exit status."""
        while True:
            for worker in list(self.workers):
                if worker.process.poll() is not None and not worker.handled:
                    worker.handled = True
                    self._on_exit(worker)
            if all(w.process.poll() is not None for w in self.workers):
                break
            time.sleep(0.2)
        self.close()
        return self.exit_code if self.exit_code is not None else EXIT_OK

    def close(self) -> None:
        """Stop the workers (killing those that do not stop in time), the query server, the lock."""
        self.request_shutdown()
        deadline = time.monotonic() + STOP_TIMEOUT_S
        for worker in self.workers:
            try:
                worker.process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                log.warning(
                    "worker %d (pid %d) did not stop in time: killed", worker.index, worker.process.pid
                )
                worker.process.kill()
                worker.process.wait()
        if self._front is not None:
            self._front.stop()
            self._front = None
        if self._lock_fd is not None:
            unlock_state_dir(self._lock_fd)
            self._lock_fd = None

    # -- workers --------------------------------------------------------------------------------------
    def _spawn(self, index: int) -> Worker:
        config = {
            **self.config,
            "state.dir": str(self.app_dir / "workers" / str(index)),
            "application.server": f"{self.host}:0",
        }
        spec = {"app": self.app_spec, "config": config, "worker": index, "log_level": self.log_level}
        process = subprocess.Popen(
            [sys.executable, "-m", "edge.runtime.worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=os.getcwd(),
        )
        assert process.stdin is not None
        process.stdin.write(json.dumps(spec))
        process.stdin.close()
        worker = Worker(index, process)
        threading.Thread(
            target=self._read_ready, args=(worker,), name=f"worker-{index}-stdout", daemon=True
        ).start()
        log.info("started worker %d (pid %d)", index, process.pid)
        return worker

    def _read_ready(self, worker: Worker) -> None:
        assert worker.process.stdout is not None
        for line in worker.process.stdout:
            if line.startswith(READY_PREFIX) and not worker.ready.is_set():
                said = json.loads(line[len(READY_PREFIX) :])
                worker.server, worker.instance = said["server"], said["instance"]
                worker.ready.set()
            else:
                sys.stdout.write(line)  # the app's own output passes through

    def _on_exit(self, worker: Worker) -> None:
        code = worker.process.returncode
        if self._stopping.is_set():
            if code not in (EXIT_OK, -signal.SIGTERM) and self.exit_code in (None, EXIT_OK):
                self.exit_code = code if code in (EXIT_FAILED, EXIT_FENCED) else EXIT_FAILED
            return
        if code == EXIT_FENCED:
            log.error("worker %d was fenced by a newer instance: stopping the instance", worker.index)
            self.exit_code = EXIT_FENCED
            self.request_shutdown()
            return
        if self.replace_failed and worker.ready.is_set():
            # a worker that failed before it ever ran (a bad setting, a missing topic) would fail again
            log.warning("worker %d exited with status %s: replacing it (replace_thread)", worker.index, code)
            replacement = self._spawn(worker.index)
            replacement.restarts = worker.restarts + 1
            self.workers[self.workers.index(worker)] = replacement
            return
        log.error(
            "worker %d exited with status %s: stopping the instance (shutdown_client)", worker.index, code
        )
        self.exit_code = EXIT_FAILED
        self.request_shutdown()

    def live_servers(self) -> list[str]:
        return [w.server for w in self.workers if w.ready.is_set() and w.server and w.process.poll() is None]

    # -- the instance's query server ----------------------------------------------------------------
    def _serve_front(self) -> BoundedHTTPServer:
        supervisor = self
        handler = type("FrontHandler", (_FrontHandler,), {"supervisor": supervisor})
        server = BoundedHTTPServer(
            (self.bind_host, self.port),
            handler,
            read_timeout_s=10.0,
            max_workers=8,
            max_connections=256,
            backlog=128,
            disconnects=RateLimitedLog(log, "early disconnects", interval_s=10.0, level=logging.INFO),
            refusals=RateLimitedLog(log, "refused connections", level=logging.WARNING),
        )
        port = server.server_address[1]
        extra = str(self.config.get("http.allowed.hosts", "") or "")
        self.allowed_hosts = AllowedHosts(
            (*LOOPBACK_NAMES, self.bind_host, self.host),
            (port,),
            [e.strip() for e in extra.split(",") if e.strip()],
        )
        server.start("streamhouse-workers-http")
        return server

    def fetch(self, server: str, path: str, timeout: float = 10.0) -> tuple[int, str, bytes]:
        """GET ``path`` of one worker: (status, content type, body); status 0 when it did not answer."""
        request = urllib.request.Request(f"http://{server}{path}", headers={"Host": server})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return response.status, response.headers.get("Content-Type", ""), response.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.headers.get("Content-Type", ""), exc.read()
        except OSError as exc:
            return 0, "application/json", json.dumps({"error": f"worker at {server}: {exc}"}).encode()

    def health(self) -> tuple[int, dict[str, Any]]:
        states: list[dict[str, Any]] = []
        ok = True
        for worker in self.workers:
            entry: dict[str, Any] = {
                "worker": worker.index,
                "pid": worker.process.pid,
                "server": worker.server,
                "restarts": worker.restarts,
            }
            if not worker.ready.is_set() or worker.server is None:
                entry["state"] = "STARTING" if worker.process.poll() is None else "EXITED"
                ok = False
            else:
                status, _, body = self.fetch(worker.server, "/health", timeout=5.0)
                entry.update(json.loads(body) if status == 200 else {"state": "UNREACHABLE"})
                ok = ok and status == 200
            states.append(entry)
        names = {s.get("state") for s in states}
        overall = "RUNNING" if names == {"RUNNING"} else "ERROR" if "ERROR" in names else "REBALANCING"
        if len(states) < self.count:  # the front answers before the workers are spawned: not healthy yet
            ok, overall = False, "STARTING"
        # what any worker sees wrong with the cluster (partitions without a leader, sends failing), once
        reasons = list(dict.fromkeys(r for s in states for r in s.get("reasons", ())))
        body = {"state": overall, "status": "DEGRADED" if reasons else "OK", "reasons": reasons}
        return (200 if ok else 503), {**body, "workers": states}

    def metrics(self) -> str:
        texts = []
        for worker in self.workers:
            if worker.server is not None and worker.ready.is_set():
                status, _, body = self.fetch(worker.server, "/metrics")
                if status == 200:
                    texts.append((worker.index, body.decode()))
        return merge_metrics(texts)

    def proxy(self, path: str) -> tuple[int, str, bytes]:
        servers = self.live_servers()
        if not servers:
            body = {"error": "no worker of this instance serves queries yet; retry"}
            return 503, "application/json", json.dumps(body).encode()
        self._next = (self._next + 1) % len(servers)
        return self.fetch(servers[self._next], path)


class _FrontHandler(BaseHTTPRequestHandler):
    supervisor: StreamWorkers
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("http %s", format % args)

    def _send(self, status: int, content_type: str, body: bytes) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type or "application/json")
            self.send_header("Content-Length", str(len(body)))
            if status == 503:
                self.send_header("Retry-After", "1")
            self.end_headers()
            self.wfile.write(body)
        except (ConnectionError, TimeoutError) as exc:
            self.close_connection = True
            self.server.client_gone(self.client_address, exc)  # type: ignore[attr-defined]

    def do_GET(self) -> None:
        sup = self.supervisor
        if not sup.allowed_hosts.allows(self.headers.get("Host")):
            self.close_connection = True
            body = {"error": "not a name of this server; add it to the http.allowed.hosts setting"}
            self._send(421, "application/json", json.dumps(body).encode())
            return
        path = self.path.split("?", 1)[0]
        if path == "/health":
            status, health = sup.health()
            self._send(status, "application/json", json.dumps(health).encode())
        elif path == "/metrics":
            self._send(200, "text/plain; version=0.0.4; charset=utf-8", sup.metrics().encode())
        else:
            self._send(*sup.proxy(self.path))


def merge_metrics(texts: list[tuple[int, str]]) -> str:
    """The workers' Prometheus expositions as one: each family once (its HELP and TYPE from the first
    worker that has it), every sample labelled ``worker="i"`` so that the series stay apart."""
    families: dict[str, dict[str, Any]] = {}
    order: list[str] = []

    def family(name: str) -> dict[str, Any]:
        if name not in families:
            families[name] = {"help": None, "type": None, "samples": []}
            order.append(name)
        return families[name]

    for index, text in texts:
        current: str | None = None
        for line in text.splitlines():
            if line.startswith("# HELP ") or line.startswith("# TYPE "):
                kind, name = line[2:6], line.split(" ", 3)[2]
                entry = family(name)
                if entry[kind.lower()] is None:
                    entry[kind.lower()] = line
                current = name
                continue
            if not line or line.startswith("#"):
                continue
            metric = line.split("{", 1)[0].split(" ", 1)[0]
            owner = current if current is not None and metric.startswith(current) else metric
            family(owner)["samples"].append(_label(line, metric, index))
    out: list[str] = []
    for name in order:
        entry = families[name]
        out += [line for line in (entry["help"], entry["type"]) if line]
        out += entry["samples"]
    return "\n".join(out) + "\n"


def _label(line: str, metric: str, worker: int) -> str:
    """``line`` (a sample of ``metric``) with ``worker="i"`` first among its labels."""
    rest = line[len(metric) :]
    label = f'worker="{worker}"'
    if not rest.startswith("{"):
        return f"{metric}{{{label}}}{rest}"
    inner = rest[1:]
    return f"{metric}{{{label}{'' if inner.startswith('}') else ','}{inner}"
