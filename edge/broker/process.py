"""What every local broker process shares: its record, its errors, the port checks and the lifecycle.

Both local brokers (the embedded Tansu binary, ``edge/broker/embedded.py``, and Apache Kafka run from
jars, ``edge/broker/kafka.py``) are a child process we own on loopback: a free port unless one is asked
for, ready once it accepts connections and answers a metadata request, stopped with SIGTERM then
SIGKILL. That lifecycle lives here once (:class:`BrokerProcess`); each broker only says how to launch
itself and how to word its failures, so neither has to borrow the other's private helpers.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import ClassVar, Self

from edge.errors import StreamhouseError

LOOPBACK = "127.0.0.1"


class BrokerError(StreamhouseError):
    """Base class of local-broker failures a user can act on."""


class BrokerPortInUseError(BrokerError):
    pass


class BrokerStartError(BrokerError):
    pass


class BrokerAlreadyRunningError(BrokerError):
    def __init__(self, info: BrokerInfo) -> None:
        self.info = info
        super().__init__(
            f"an embedded broker is already running at {info.bootstrap_servers} (pid {info.pid}); "
            "use `streamhouse broker stop` first or use that one"
        )


class BrokerNotRunningError(BrokerError):
    pass


@dataclass(frozen=True)
class BrokerInfo:
    pid: int
    host: str
    port: int
    started_at: float
    log_path: str
    binary: str
    #: ``tansu`` (embedded, in memory) or ``kafka`` (Apache Kafka, data on disk under ``data_dir``).
    kind: str = "tansu"
    data_dir: str | None = None
    #: A multi-node Apache Kafka cluster (``streamhouse broker start --brokers N``): one entry per node
    #: (``node_id``, ``pid``, ``port``, ``log_path``, ``data_dir``); the fields above are node 1's. Empty
    #: for a single broker, so records written before clusters existed still read.
    nodes: tuple[dict[str, object], ...] = ()

    @property
    def bootstrap_servers(self) -> str:
        """Every node's ``host:port`` for a cluster (a client then survives any one node down)."""
        if self.nodes:
            return ",".join(f"{self.host}:{node['port']}" for node in self.nodes)
        return f"{self.host}:{self.port}"

    @property
    def pids(self) -> list[int]:
        """Every process of this broker: the nodes' of a cluster, else the one."""
        return [int(str(node["pid"])) for node in self.nodes] if self.nodes else [self.pid]


def free_port(host: str = LOOPBACK) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def port_is_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
        return True


def accepts_connections(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def answers_metadata(bootstrap: str, timeout_s: float) -> bool:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    try:
        admin.list_topics(timeout=timeout_s)
    except Exception:
        return False
    return True


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie still answers kill(0); treat it as dead.
    with contextlib.suppress(OSError):
        status = Path(f"/proc/{pid}/status").read_text()
        if "\nState:\tZ" in status:
            return False
    return True


def log_tail(path: Path, lines: int = 15) -> str:
    """The last ``lines`` of a broker's log ("" when unreadable): what a start-up failure quotes."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def wait_until_ready(
    process: subprocess.Popen[bytes], info: BrokerInfo, timeout_s: float, poll_s: float
) -> bool:
    """True once the broker accepts connections and answers a metadata request; False when the process
    exited or ``timeout_s`` passed first (the caller tells which, with its own wording and cleanup)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return False
        if accepts_connections(info.host, info.port) and answers_metadata(info.bootstrap_servers, 2.0):
            return True
        time.sleep(poll_s)
    return False


def terminate(pid: int, timeout_s: float, process: subprocess.Popen[bytes] | None = None) -> None:
    """SIGTERM, wait, then SIGKILL (Tansu holds only in-memory data; Kafka recovers its logs on restart)."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process is not None:
            if process.poll() is not None:
                return
        elif not pid_alive(pid):
            return
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    if process is not None:
        process.wait(timeout=5)


class BrokerProcess:
    """One broker child process on loopback; usable as a context manager.

    A subclass implements :meth:`start` (choose the port with :meth:`_choose_port`, launch with
    :meth:`_launch`, then :meth:`_wait_ready`) and sets the class attributes that word its failures.
    ``detached=True`` puts the broker in its own session so it outlives the starting process
    (``streamhouse broker start``); otherwise it is a plain child that dies with us.
    """

    #: ``BrokerInfo.kind`` of this broker.
    kind: ClassVar[str]
    #: How messages name it ("the embedded broker").
    title: ClassVar[str]
    #: Seconds between readiness checks while it starts.
    ready_poll_s: ClassVar[float] = 0.05
    #: Seconds ``stop()`` waits after SIGTERM before SIGKILL.
    stop_timeout_s: ClassVar[float] = 10.0
    #: Log lines quoted when it exits during start-up.
    failure_log_lines: ClassVar[int] = 15
    #: Text (lower case) in its log that means its port was taken.
    port_in_use_marker: ClassVar[str] = "in use"

    def __init__(
        self,
        *,
        port: int | None,
        host: str,
        log_dir: Path | None,
        startup_timeout_s: float,
        detached: bool,
    ) -> None:
        self.host = host
        self.requested_port = port
        self.log_dir = log_dir
        self.startup_timeout_s = startup_timeout_s
        self.detached = detached
        self._process: subprocess.Popen[bytes] | None = None
        self._info: BrokerInfo | None = None

    @property
    def info(self) -> BrokerInfo:
        if self._info is None:
            raise BrokerNotRunningError(f"{self.title} has not been started")
        return self._info

    @property
    def bootstrap_servers(self) -> str:
        return self.info.bootstrap_servers

    @property
    def pid(self) -> int:
        return self.info.pid

    def start(self) -> BrokerInfo:
        raise NotImplementedError

    def _choose_port(self) -> int:
        """The requested port, or a free one; a requested port must be valid and free."""
        port = self.requested_port if self.requested_port is not None else free_port(self.host)
        if not 1 <= port <= 65535:
            raise BrokerStartError(f"port {port} is not a valid TCP port (1-65535)")
        if not port_is_free(self.host, port):
            raise BrokerPortInUseError(
                f"port {port} on {self.host} is already in use; pick another with --port N "
                "or omit --port to use a free one"
            )
        return port

    def _launch(self, cmd: list[str], log_path: Path, env: dict[str, str] | None = None) -> int:
        """Start ``cmd`` with its output appended to ``log_path``; its pid."""
        with open(log_path, "ab") as log:
            self._process = subprocess.Popen(
                cmd,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=self.detached,
            )
        return self._process.pid

    def _port_in_use_message(self, port: int) -> str:
        return f"the broker could not bind port {port}: it is in use; pick another port"

    def _discard(self) -> None:
        """Drop what only this run needed (after a failed start and after ``stop()``); nothing here."""

    def _wait_ready(self, log_path: Path) -> None:
        """Return once it is ready; else stop it and raise why (timeout, port taken, early exit)."""
        assert self._process is not None
        process = self._process
        if wait_until_ready(process, self.info, self.startup_timeout_s, self.ready_poll_s):
            return
        code = process.poll()
        if code is None:
            self.stop()
            raise BrokerStartError(
                f"{self.title} did not become ready within {self.startup_timeout_s:.0f}s on "
                f"{self.host}:{self.info.port}; see {log_path}"
            )
        self._process = None
        self._discard()
        log = log_tail(log_path, self.failure_log_lines)
        if self.port_in_use_marker in log.lower():
            raise BrokerPortInUseError(self._port_in_use_message(self.info.port))
        raise BrokerStartError(
            f"{self.title} exited with code {code} during start-up; its log ({log_path}) ends with:\n{log}"
        )

    def stop(self, timeout_s: float | None = None) -> None:
        """SIGTERM (a controlled shutdown), SIGKILL after ``timeout_s`` (default ``stop_timeout_s``)."""
        process, self._process = self._process, None
        if process is not None:
            terminate(process.pid, self.stop_timeout_s if timeout_s is None else timeout_s, process)
        self._discard()

    def kill(self) -> None:
        """SIGKILL, as a crash would."""
        process, self._process = self._process, None
        if process is not None:
            process.kill()
            process.wait(10)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
