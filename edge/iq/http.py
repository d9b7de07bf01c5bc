"""The HTTP server under the query/metrics handler: bounded threads, idle timeouts, a real backlog,
quiet hang-ups and a ``Host`` check.

``http.server.ThreadingHTTPServer`` starts one thread per connection and keeps it for as long as the
client keeps the connection, listens with a backlog of 5 and prints a traceback for every client that
hangs up early. An edge instance serves scrapers, dashboards and other instances, so:

* **Connections wait for their first bytes in one selector, not in threads.** A connection that sends
  nothing for ``read_timeout_s`` is closed there; only one with a request to read goes to a worker.
* **Workers are bounded** (``max_workers``, started as needed); ready connections queue for them. A
  worker holds a keep-alive connection between requests for ``read_timeout_s`` at most (the socket's
  timeout), so no client keeps a worker forever. Past ``max_connections`` open connections a new one is
  answered ``503`` at once and closed: file handles stay bounded too.
* **The listen backlog is** ``backlog`` (default ``socket.SOMAXCONN``, capped by the kernel's
  ``net.core.somaxconn``): a burst of connects waits in the kernel instead of being dropped and retried
  by the clients after 1 s, 3 s, 7 s.
* **A client that hangs up early** (reset, broken pipe, a timeout while writing) is one log line at most
  every ``interval_s`` (:class:`RateLimitedLog`), never a traceback.
* **``Host`` must name this server** (:class:`AllowedHosts`): a browser page on a name the attacker
  rebinds to 127.0.0.1 sends its own name as ``Host`` and is refused, so it cannot read stores.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import selectors
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any, cast

log = logging.getLogger(__name__)

#: errors that mean "the client went away" (reset, broken pipe, aborted) or stopped reading in time
CLIENT_GONE = (ConnectionError, TimeoutError)

#: the names a loopback server is reached by, whatever it is bound to
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")

_BUSY_BODY = b'{"error": "too many open connections to this instance; retry"}'
_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"
    b"Connection: close\r\nContent-Length: " + str(len(_BUSY_BODY)).encode() + b"\r\n\r\n" + _BUSY_BODY
)


class RateLimitedLog:
    """One line at most every ``interval_s``; the events in between are counted and reported with the next
    line (or by :meth:`flush`). Clients that hang up are not the app's fault, but a flood of them (a
    scraper timing out every few seconds) is worth one line, not one per event."""

    def __init__(
        self,
        logger: logging.Logger,
        what: str,
        *,
        level: int = logging.INFO,
        interval_s: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.logger = logger
        self.what = what
        self.level = level
        self.interval_s = interval_s
        self._clock = clock
        self._lock = threading.Lock()
        self._last: float | None = None
        self._suppressed = 0
        #: every event, logged or not (tests, metrics)
        self.total = 0

    def note(self, detail: str) -> None:
        """Count one event; log it (with the count of the ones not logged since) unless a line was logged
        less than ``interval_s`` ago."""
        now = self._clock()
        with self._lock:
            self.total += 1
            if self._last is not None and now - self._last < self.interval_s:
                self._suppressed += 1
                return
            suppressed, since = self._suppressed, self._last
            self._suppressed, self._last = 0, now
        if suppressed and since is not None:
            self.logger.log(
                self.level,
                "%s (%d more %s in the last %.0f s)",
                detail,
                suppressed,
                self.what,
                now - since,
            )
        else:
            self.logger.log(self.level, "%s", detail)

    def flush(self) -> None:
        """Report the events counted since the last line (at shutdown: the log ends with them)."""
        with self._lock:
            suppressed, self._suppressed = self._suppressed, 0
        if suppressed:
            self.logger.log(self.level, "%d more %s", suppressed, self.what)


def split_host(value: str) -> tuple[str, int | None] | None:
    """``Host`` header -> (lower-case name without a trailing dot, port or None); None when malformed.
    IPv6 literals come bracketed (``[::1]:8080``) and are returned without the brackets."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        name, rest = value[1:end], value[end + 1 :]
    else:
        name, sep, port = value.partition(":")
        rest = sep + port
    if not name:
        return None
    if not rest:
        return name.rstrip("."), None
    if rest[0] != ":" or not rest[1:].isdigit() or int(rest[1:]) > 65535:
        return None
    return name.rstrip("."), int(rest[1:])


class AllowedHosts:
    """Which ``Host`` headers this server answers: the defense against DNS rebinding.

    A page on ``http://evil.example:PORT`` whose name the attacker re-points at 127.0.0.1 reaches the
    server with the browser's same-origin blessing, but its requests carry ``Host: evil.example:PORT``.
    So only names this server is known by pass: the loopback names, the address it is bound to, the host
    of ``application.server`` (other instances forward key lookups there) and the extra names given,
    each with the bound or the advertised port (or none: a proxy may omit it). An extra name given with
    a port (``iq.example.com:8443``) passes with that port only.

    A request without ``Host`` passes: browsers always send one, and HTTP/1.0 tools may not.
    """

    def __init__(self, names: Iterable[str], ports: Iterable[int], extra: Iterable[str] = ()) -> None:
        # a wildcard bind address (0.0.0.0) stays in: only a client that asked for it by that literal
        # sends it (Linux connects 0.0.0.0 to loopback), never a page on a rebound name of its own
        self.names = {n.lower().strip("[]").rstrip(".") for n in names if n}
        self.ports = {p for p in ports if p}
        self.pairs: set[tuple[str, int]] = set()
        for entry in extra:
            parsed = split_host(entry)
            if parsed is None:
                raise ValueError(f"not a host name or host:port: {entry!r}")
            name, port = parsed
            if port is None:
                self.names.add(name)
            else:
                self.pairs.add((name, port))

    def allows(self, host_header: str | None) -> bool:
        if host_header is None:
            return True
        parsed = split_host(host_header)
        if parsed is None:
            return False
        name, port = parsed
        if name in self.names and (port is None or port in self.ports):
            return True
        return port is not None and (name, port) in self.pairs

    def __repr__(self) -> str:
        named = sorted(self.names) + sorted(f"{n}:{p}" for n, p in self.pairs)
        return f"AllowedHosts({', '.join(named)}; ports {sorted(self.ports)})"


class BoundedHTTPServer(HTTPServer):
    """An ``HTTPServer`` with a selector for idle connections and a bounded pool of worker threads.

    Run :meth:`serve` on a thread of its own and stop it with :meth:`stop` (not ``serve_forever`` /
    ``shutdown``: the accept loop is this class's own, since it also watches the idle connections).
    """

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        *,
        read_timeout_s: float,
        max_workers: int,
        max_connections: int,
        backlog: int,
        disconnects: RateLimitedLog,
        refusals: RateLimitedLog,
    ) -> None:
        if max_workers < 1 or max_connections < max_workers:
            raise ValueError(f"need 1 <= max_workers ({max_workers}) <= max_connections ({max_connections})")
        self.request_queue_size = backlog  # the listen() backlog of TCPServer.server_activate
        self.read_timeout_s = read_timeout_s
        self.max_workers = max_workers
        self.max_connections = max_connections
        self.disconnects = disconnects
        self.refusals = refusals
        super().__init__(address, handler)  # binds and listens (OSError: the port is taken)
        self.socket.setblocking(False)
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        #: accepted connections waiting for their first bytes -> (client address, deadline)
        self._waiting: dict[socket.socket, tuple[Any, float]] = {}
        self._ready: queue.SimpleQueue[tuple[socket.socket, Any] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._workers: list[threading.Thread] = []
        #: connections handed to the workers and not finished yet (queued or being served)
        self._busy = 0
        #: connections accepted and not closed yet (waiting, queued or being served)
        self.open_connections = 0
        self._stopping = threading.Event()
        self._serving = threading.Event()
        self._stopped = threading.Event()

    # -- the accept/idle loop (one thread) ----------------------------------------------------------------
    def start(self, name: str) -> threading.Thread:
        """Run :meth:`serve` on a daemon thread ``name``."""
        self._serving.set()
        thread = threading.Thread(target=self.serve, name=name, daemon=True)
        thread.start()
        return thread

    def serve(self) -> None:
        self._serving.set()
        sel = self._selector
        sel.register(self.socket, selectors.EVENT_READ, "listen")
        sel.register(self._wake_r, selectors.EVENT_READ, "wake")
        try:
            while not self._stopping.is_set():
                try:
                    self._serve_once(sel)
                except Exception:
                    # never let one odd socket end the loop: the instance would stop answering for good
                    log.exception("HTTP accept loop failed; going on")
                    time.sleep(0.1)
        finally:
            for conn in list(self._waiting):
                self._close(conn)
            self._waiting.clear()
            self._stopped.set()

    def _serve_once(self, sel: selectors.BaseSelector) -> None:
        for key, _events in sel.select(self._next_timeout()):
            if key.data == "listen":
                self._accept_all()
            elif key.data == "wake":
                with contextlib.suppress(OSError):
                    self._wake_r.recv(4096)
            else:
                conn = cast(socket.socket, key.fileobj)
                sel.unregister(conn)
                addr, _deadline = self._waiting.pop(conn)
                self._dispatch(conn, addr)
        self._expire(time.monotonic())

    def _next_timeout(self) -> float:
        if not self._waiting:
            return 1.0
        earliest = min(deadline for _addr, deadline in self._waiting.values())
        return min(1.0, max(0.0, earliest - time.monotonic()))

    def _accept_all(self) -> None:
        # a burst: take what the backlog holds, but hand control back now and then for ready connections
        for _ in range(256):
            try:
                conn, addr = self.socket.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # EMFILE and friends: keep serving the connections already open
                self.refusals.note(f"cannot accept HTTP connections: {exc}")
                return
            if self.open_connections >= self.max_connections:
                self._refuse(conn, addr)
                continue
            with self._lock:
                self.open_connections += 1
            conn.setblocking(False)
            self._waiting[conn] = (addr, time.monotonic() + self.read_timeout_s)
            self._selector.register(conn, selectors.EVENT_READ, "conn")

    def _refuse(self, conn: socket.socket, addr: Any) -> None:
        """Over ``max_connections``: 503 without reading the request (best effort) and close."""
        try:
            conn.setblocking(False)
            conn.send(_BUSY)
        except OSError:
            pass
        finally:
            conn.close()
        self.refusals.note(
            f"HTTP connection from {_address(addr)} refused: {self.max_connections} connections open"
        )

    def _expire(self, now: float) -> None:
        expired = [conn for conn, (_addr, deadline) in self._waiting.items() if deadline <= now]
        for conn in expired:
            addr, _deadline = self._waiting.pop(conn)
            self._selector.unregister(conn)
            log.debug(
                "closing HTTP connection from %s: nothing sent in %.1f s", _address(addr), self.read_timeout_s
            )
            self._close(conn)

    def _close(self, conn: socket.socket) -> None:
        with contextlib.suppress(OSError):
            conn.close()
        with self._lock:
            self.open_connections -= 1

    # -- workers -----------------------------------------------------------------------------------------
    def _dispatch(self, conn: socket.socket, addr: Any) -> None:
        conn.setblocking(True)
        conn.settimeout(self.read_timeout_s)
        with self._lock:
            self._busy += 1
            start = self._busy > len(self._workers) and len(self._workers) < self.max_workers
            if start:
                worker = threading.Thread(
                    target=self._work, name=f"streamhouse-http-{len(self._workers)}", daemon=True
                )
                self._workers.append(worker)
        if start:
            worker.start()
        self._ready.put((conn, addr))

    def _work(self) -> None:
        while True:
            item = self._ready.get()
            if item is None:
                return
            conn, addr = item
            try:
                self.finish_request(conn, addr)
            except BaseException:
                self.handle_error(conn, addr)
            finally:
                self.shutdown_request(conn)
                with self._lock:
                    self.open_connections -= 1
                    self._busy -= 1

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A hang-up is one rate-limited line; anything else is a bug worth its traceback (once)."""
        exc = sys.exc_info()[1]
        if isinstance(exc, CLIENT_GONE):
            self.client_gone(client_address, exc)
            return
        log.error("HTTP connection from %s failed", _address(client_address), exc_info=True)

    def client_gone(self, client_address: Any, exc: BaseException) -> None:
        self.disconnects.note(
            f"HTTP client {_address(client_address)} went away before its answer was complete "
            f"({type(exc).__name__})"
        )

    # -- lifecycle ---------------------------------------------------------------------------------------
    def stop(self, timeout: float = 5.0) -> None:
        """Stop accepting and close the idle connections and the listening socket. Workers end after the
        requests they have (not waited for: one may wait for the stream thread that is shutting down)."""
        self._stopping.set()
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")
        if self._serving.is_set():
            self._stopped.wait(timeout)
        with self._lock:
            workers = len(self._workers)
        for _ in range(workers):
            self._ready.put(None)
        self.server_close()
        self._selector.close()
        self._wake_r.close()
        self._wake_w.close()
        self.disconnects.flush()
        self.refusals.flush()


def _address(addr: Any) -> str:
    if isinstance(addr, tuple) and len(addr) >= 2:
        return f"{addr[0]}:{addr[1]}"
    return str(addr)
