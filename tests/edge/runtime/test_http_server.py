"""The edge app's HTTP server (interactive queries, /metrics, /health) under hostile or careless clients.

Idle connections must not hold a thread each forever, a burst of connects must not be
dropped by a tiny listen backlog, a client that hangs up early must not flood the log with tracebacks,
and a page in the user's browser must not read stores through a DNS-rebound name (``Host`` check).

One in-process app (started as the runtime starts it, its server from ``StreamsApp.start``) serves
every test of the module; its read timeout and worker count are lowered so the tests stay short.
All traffic is on loopback and bounded (at most 100 concurrent clients).
"""

from __future__ import annotations

import json
import logging
import socket
import struct
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from edge.kafka import KafkaClientConfig, TopicSpec, create_topics
from edge.runtime import StreamsApp, StreamsConfig, StreamsConfigError
from tests.edge.runtime.harness import produce

pytestmark = [pytest.mark.broker, pytest.mark.timeout(120)]

READ_TIMEOUT_S = 1.0
MAX_WORKERS = 8
MAX_CONNECTIONS = 120
ALLOWED_EXTRA = "iq.example.internal"


@pytest.fixture(scope="module")
def app(kafka_broker: KafkaClientConfig, tmp_path_factory: pytest.TempPathFactory) -> Iterator[StreamsApp]:
    """A running count app with a few keys in its ``counts`` store and a short HTTP read timeout."""
    import uuid

    suffix = uuid.uuid4().hex[:8]
    src, out = f"t-http-in-{suffix}", f"t-http-out-{suffix}"
    create_topics(kafka_broker, [TopicSpec(src, 1), TopicSpec(out, 1)])
    with pytest.MonkeyPatch.context() as mp:
        import edge.iq.server as server_module

        mp.setenv("EDGE_IN", src)
        mp.setenv("EDGE_OUT", out)
        mp.setattr(server_module, "READ_TIMEOUT_S", READ_TIMEOUT_S, raising=False)
        mp.setattr(server_module, "MAX_WORKERS", MAX_WORKERS, raising=False)
        mp.setattr(server_module, "MAX_CONNECTIONS", MAX_CONNECTIONS, raising=False)
        from tests.edge.runtime.apps.count_app import counts

        state_dir: Path = tmp_path_factory.mktemp("http-state")
        cfg = {
            "application.id": f"t-http-{suffix}",
            "bootstrap.servers": kafka_broker.bootstrap_servers,
            "broker.profile": kafka_broker.profile.value,
            "state.dir": str(state_dir),
            "commit.interval.ms": 100,
            "http.allowed.hosts": ALLOWED_EXTRA,
        }
        application = StreamsApp(counts, cfg)
        application.start()
    try:
        assert application.wait_until_running(60)
        produce(kafka_broker, src, [(f"k{i}", {"n": i}) for i in range(20)])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            status, body = _get(application.http.port, "/v1/stores/counts/keys/k19")
            if status == 200:
                break
            time.sleep(0.1)
        else:
            pytest.fail(f"k19 never became queryable: {status} {body}")
        yield application
    finally:
        application.close(20)


# -- a tiny HTTP client on raw sockets (to control Host, timing and hang-ups) ----------------------------
def _request(path: str, host: str) -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode()


def _read_all(sock: socket.socket) -> bytes:
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def _get(port: int, path: str, host: str | None = None, timeout: float = 10) -> tuple[int, Any]:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(_request(path, host or f"127.0.0.1:{port}"))
        raw = _read_all(sock)
    head, _, body = raw.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    try:
        return status, json.loads(body)
    except ValueError:
        return status, body.decode(errors="replace")


def _closed_by_peer(sock: socket.socket) -> bool:
    """True when the server has closed (or reset) the connection; False while it is still open (what it
    sent meanwhile is read and dropped)."""
    sock.setblocking(False)
    try:
        return sock.recv(65536) == b""
    except BlockingIOError:
        return False
    except ConnectionError:
        return True


def _hang_up(sock: socket.socket) -> None:
    """Close with a reset (SO_LINGER 0): the server's next read or write on it fails at once."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


# -- 2: idle connections --------------------------------------------------------------------------------
def test_idle_connections_are_closed_after_the_read_timeout_with_bounded_threads(app: StreamsApp) -> None:
    port = app.http.port
    threads_before = threading.active_count()
    socks = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(50)]
    try:
        time.sleep(0.5)
        grown = threading.active_count() - threads_before
        assert grown <= MAX_WORKERS, f"50 idle connections started {grown} threads"
        # while they idle, the server still answers a real request
        assert _get(port, "/health", timeout=5)[0] == 200
        deadline = time.monotonic() + READ_TIMEOUT_S + 3
        open_socks = list(socks)
        while open_socks and time.monotonic() < deadline:
            time.sleep(0.1)
            open_socks = [s for s in open_socks if not _closed_by_peer(s)]
        assert not open_socks, (
            f"{len(open_socks)}/50 idle connections still open after {READ_TIMEOUT_S + 3} s"
        )
    finally:
        for s in socks:
            s.close()
    time.sleep(0.3)
    assert threading.active_count() - threads_before <= MAX_WORKERS


def test_keep_alive_connection_is_closed_once_idle(app: StreamsApp) -> None:
    """A client that got its answer and keeps the connection open without asking more holds a worker
    for the read timeout at most."""
    port = app.http.port
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(f"GET /health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
        head = sock.recv(65536)
        assert head.startswith(b"HTTP/1.1 200")
        deadline = time.monotonic() + READ_TIMEOUT_S + 3
        while not _closed_by_peer(sock):
            assert time.monotonic() < deadline, "idle keep-alive connection never closed"
            time.sleep(0.1)
            sock.setblocking(True)


def test_connections_past_the_limit_get_503_at_once(app: StreamsApp) -> None:
    port = app.http.port
    socks = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(MAX_CONNECTIONS + 10)]
    try:
        time.sleep(0.5)
        answers = []
        for s in socks:
            s.setblocking(False)
            try:
                answers.append(s.recv(65536))
            except BlockingIOError:
                answers.append(None)  # still open, nothing sent: waiting for its request
            except ConnectionError:
                answers.append(b"reset")
        refused = [a for a in answers if a is not None]
        assert len(refused) >= 10, f"{len(refused)} of {len(socks)} connections refused"
        assert all(a.startswith(b"HTTP/1.1 503 ") for a in refused if a != b"reset"), refused[:3]
        assert answers[: MAX_CONNECTIONS - 10] == [None] * (MAX_CONNECTIONS - 10)
    finally:
        for s in socks:
            s.close()
    time.sleep(0.2)
    assert _get(port, "/health")[0] == 200


# -- 3: a burst of connects -----------------------------------------------------------------------------
def test_hundred_concurrent_clients_are_all_served_promptly(app: StreamsApp) -> None:
    """100 clients connect at the same instant: every connect completes at once (the kernel completes
    the handshake of a connection that fits the listen backlog whatever the server is doing; one that
    does not fit is dropped and retried by the client after 1 s, 3 s, 7 s) and every request is served."""
    port = app.http.port
    clients = 100
    barrier = threading.Barrier(clients)
    results: list[tuple[int, float, float]] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def client() -> None:
        try:
            barrier.wait(10)
            t0 = time.monotonic()
            with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
                connected = time.monotonic() - t0
                sock.sendall(_request("/health", f"127.0.0.1:{port}"))
                raw = _read_all(sock)
            with lock:
                results.append((int(raw.split(b" ", 2)[1]), connected, time.monotonic() - t0))
        except BaseException as exc:
            with lock:
                errors.append(exc)

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors[:3]
    assert sorted(status for status, _, _ in results) == [200] * clients
    slow_connects = sorted(c for _, c, _ in results if c > 0.9)
    assert not slow_connects, f"{len(slow_connects)} of {clients} connects were retried: {slow_connects}"
    # the answers themselves wait for a worker (8 here); on a busy machine a few may be slow
    slow = sorted(d for _, _, d in results if d > 1.0)
    assert len(slow) <= 10, f"{len(slow)} of {clients} requests took over 1 s: {slow}"


def test_listen_backlog_holds_a_burst(app: StreamsApp) -> None:
    assert app.http.backlog >= 128


# -- 4: early disconnects -------------------------------------------------------------------------------
def test_early_disconnects_log_one_line_and_no_traceback(
    app: StreamsApp, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    port = app.http.port
    caplog.set_level(logging.DEBUG, logger="edge.iq")
    capfd.readouterr()
    for i in range(20):
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        if i % 2:
            # hangs up in the middle of its request: the server's read fails
            sock.sendall(f"GET /v1/stores/counts/all HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n".encode())
        else:
            # hangs up before the answer: the server's write fails
            sock.sendall(_request("/v1/stores/counts/all", f"127.0.0.1:{port}"))
        _hang_up(sock)
    time.sleep(1.0)
    # the server is fine afterwards
    assert _get(port, "/v1/stores/counts/keys/k1")[0] == 200
    err = capfd.readouterr().err
    assert "Traceback" not in err, err[:2000]
    records = [r for r in caplog.records if r.name.startswith("edge.iq") and r.levelno >= logging.INFO]
    assert all(r.exc_info is None for r in records), [r.getMessage() for r in records]
    assert len(records) <= 1, [r.getMessage() for r in records]
    assert "Traceback" not in caplog.text


# -- 5: Host header (DNS rebinding) ---------------------------------------------------------------------
@pytest.mark.parametrize("path", ["/v1/stores/counts/all", "/v1/stores/counts/keys/k1", "/metrics"])
def test_foreign_host_is_refused(app: StreamsApp, path: str) -> None:
    port = app.http.port
    for host in ("evil.example", f"evil.example:{port}", "127.0.0.1.evil.example", f"localhost.:{port + 1}"):
        status, body = _get(port, path, host=host)
        assert status in (403, 421), (host, status, body)
        assert "k1" not in str(body)


@pytest.mark.parametrize(
    "host", ["127.0.0.1:{port}", "localhost:{port}", "LOCALHOST:{port}", "[::1]:{port}", "127.0.0.1"]
)
def test_bound_names_are_accepted(app: StreamsApp, host: str) -> None:
    port = app.http.port
    status, body = _get(port, "/v1/stores/counts/keys/k1", host=host.format(port=port))
    assert status == 200, body
    assert body["value"] == 1


def test_allowed_hosts_setting_adds_names(app: StreamsApp) -> None:
    port = app.http.port
    assert _get(port, "/v1/stores/counts/keys/k1", host=f"{ALLOWED_EXTRA}:{port}")[0] == 200
    assert _get(port, "/v1/stores/counts/keys/k1", host=ALLOWED_EXTRA)[0] == 200
    assert _get(port, "/v1/stores/counts/keys/k1", host=f"other.{ALLOWED_EXTRA}:{port}")[0] in (403, 421)


def test_advertised_server_is_accepted(app: StreamsApp) -> None:
    """Other instances forward key lookups to ``application.server``: that name must pass."""
    port = app.http.port
    assert _get(port, "/v1/stores/counts/keys/k1", host=app.advertised_server)[0] == 200


def test_allowed_hosts_setting_is_parsed_and_validated() -> None:
    base = {"application.id": "a", "bootstrap.servers": "127.0.0.1:9092"}
    cfg = StreamsConfig.from_mapping({**base, "http.allowed.hosts": "iq.example.com, 10.0.0.7:8080"})
    assert cfg.http_allowed_hosts == ("iq.example.com", "10.0.0.7:8080")
    cfg = StreamsConfig.from_mapping({**base, "http_allowed_hosts": ["a.example", "[fd00::1]"]})
    assert cfg.http_allowed_hosts == ("a.example", "[fd00::1]")
    assert StreamsConfig.from_mapping(base).http_allowed_hosts == ()
    for bad in ("http://iq.example.com", "iq example", "a.example:99999", "*"):
        with pytest.raises(StreamsConfigError, match=r"http\.allowed\.hosts"):
            StreamsConfig.from_mapping({**base, "http.allowed.hosts": bad})


def test_rate_limited_log_reports_what_it_held_back(caplog: pytest.LogCaptureFixture) -> None:
    from edge.iq.http import RateLimitedLog

    now = [100.0]
    logger = logging.getLogger("edge.iq.test_rate_limit")
    limited = RateLimitedLog(logger, "early disconnects", interval_s=10, clock=lambda: now[0])
    with caplog.at_level(logging.INFO, logger=logger.name):
        for i in range(20):
            limited.note(f"client {i} went away")
        now[0] += 11
        limited.note("client 20 went away")
        limited.note("client 21 went away")
        limited.flush()
    assert [r.getMessage() for r in caplog.records] == [
        "client 0 went away",
        "client 20 went away (19 more early disconnects in the last 11 s)",
        "1 more early disconnects",
    ]
    assert limited.total == 22
