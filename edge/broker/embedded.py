"""Start, stop and inspect the embedded Tansu broker on loopback.

The broker is a child process we own: it listens and advertises ``127.0.0.1:<port>`` (a free port unless
one is asked for), keeps data in memory only, and is considered ready once it accepts connections and
answers a metadata request. A broker started for the CLI is recorded in ``<state_dir>/broker/broker.json``
so ``streamhouse broker status|stop`` can find it from another process.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from types import TracebackType

from edge.broker.binary import resolve_tansu_binary
from edge.errors import StreamhouseError

LOOPBACK = "127.0.0.1"
RECORD_FILE = "broker.json"


class BrokerError(StreamhouseError):
    """Base class of embedded-broker failures a user can act on."""


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

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.host}:{self.port}"


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


def _accepts_connections(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def _answers_metadata(bootstrap: str, timeout_s: float) -> bool:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    try:
        admin.list_topics(timeout=timeout_s)
    except Exception:
        return False
    return True


def _pid_alive(pid: int) -> bool:
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


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


class EmbeddedBroker:
    """One Tansu broker process on loopback; usable as a context manager.

    ``detached=True`` puts the broker in its own session so it outlives the starting process (used by
    ``streamhouse broker start``); otherwise it is a plain child that dies with us.
    """

    kind = "tansu"

    def __init__(
        self,
        *,
        port: int | None = None,
        host: str = LOOPBACK,
        log_dir: Path | None = None,
        startup_timeout_s: float = 30.0,
        detached: bool = False,
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
            raise BrokerNotRunningError("the embedded broker has not been started")
        return self._info

    @property
    def bootstrap_servers(self) -> str:
        return self.info.bootstrap_servers

    @property
    def pid(self) -> int:
        return self.info.pid

    def start(self) -> BrokerInfo:
        if self._process is not None:
            return self.info
        binary = resolve_tansu_binary()
        port = self.requested_port if self.requested_port is not None else free_port(self.host)
        if not 1 <= port <= 65535:
            raise BrokerStartError(f"port {port} is not a valid TCP port (1-65535)")
        if not port_is_free(self.host, port):
            raise BrokerPortInUseError(
                f"port {port} on {self.host} is already in use; pick another with --port N "
                "or omit --port to use a free one"
            )
        log_dir = self.log_dir or Path(os.environ.get("TMPDIR", "/tmp"))
        log_dir.mkdir(parents=True, exist_ok=True)
        log_path = log_dir / f"tansu-{port}.log"
        url = f"tcp://{self.host}:{port}"
        cmd = [
            str(binary),
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            url,
            "--storage-engine",
            "memory://tansu/",
        ]
        env = {**os.environ, "RUST_LOG": os.environ.get("RUST_LOG", "warn")}
        with open(log_path, "ab") as log:
            self._process = subprocess.Popen(
                cmd,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=self.detached,
            )
        self._info = BrokerInfo(
            pid=self._process.pid,
            host=self.host,
            port=port,
            started_at=time.time(),
            log_path=str(log_path),
            binary=str(binary),
        )
        self._wait_ready(log_path)
        return self._info

    def _wait_ready(self, log_path: Path) -> None:
        assert self._process is not None
        process = self._process
        if wait_until_ready(process, self.info, self.startup_timeout_s, 0.05):
            return
        code = process.poll()
        if code is None:
            self.stop()
            raise BrokerStartError(
                f"the embedded broker did not become ready within {self.startup_timeout_s:.0f}s on "
                f"{self.host}:{self.info.port}; see {log_path}"
            )
        self._process = None
        log = _tail(log_path)
        if "in use" in log.lower():
            raise BrokerPortInUseError(
                f"the broker could not bind port {self.info.port}: it is in use; pick another port"
            )
        raise BrokerStartError(
            f"the embedded broker exited with code {code} during start-up; its log "
            f"({log_path}) ends with:\n{log}"
        )

    def stop(self, timeout_s: float = 10.0) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        _terminate(process.pid, timeout_s, process)

    def kill(self) -> None:
        """SIGKILL, as a crash would (the in-memory data is gone)."""
        process, self._process = self._process, None
        if process is not None:
            process.kill()
            process.wait(10)

    def __enter__(self) -> EmbeddedBroker:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def wait_until_ready(
    process: subprocess.Popen[bytes], info: BrokerInfo, timeout_s: float, poll_s: float
) -> bool:
    """True once the broker accepts connections and answers a metadata request; False when the process
    exited or ``timeout_s`` passed first (the caller tells which, with its own wording and cleanup)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return False
        if _accepts_connections(info.host, info.port) and _answers_metadata(info.bootstrap_servers, 2.0):
            return True
        time.sleep(poll_s)
    return False


def _terminate(pid: int, timeout_s: float, process: subprocess.Popen[bytes] | None = None) -> None:
    """SIGTERM, wait, then SIGKILL (Tansu holds only in-memory data; Kafka recovers its logs on restart)."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process is not None:
            if process.poll() is not None:
                return
        elif not _pid_alive(pid):
            return
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    if process is not None:
        process.wait(timeout=5)


# --- the recorded broker used by the CLI -------------------------------------------------------------


def _record_path(state_dir: Path) -> Path:
    return state_dir / "broker" / RECORD_FILE


def read_record(state_dir: Path) -> BrokerInfo | None:
    path = _record_path(state_dir)
    try:
        data = json.loads(path.read_text())
        return BrokerInfo(**data)
    except FileNotFoundError:
        return None
    except (ValueError, TypeError) as exc:
        raise BrokerError(f"the broker record {path} is unreadable ({exc}); delete it and retry") from exc


def broker_status(state_dir: Path) -> tuple[BrokerInfo | None, bool]:
    """The recorded broker and whether it is alive and accepting connections."""
    info = read_record(state_dir)
    if info is None:
        return None, False
    alive = _pid_alive(info.pid) and _accepts_connections(info.host, info.port)
    return info, alive


def start_recorded_broker(state_dir: Path, port: int | None = None, kind: str = "tansu") -> BrokerInfo:
    """Start a detached broker of ``kind`` and record it. Apache Kafka keeps its data (and, when free,
    its last port) under ``<state_dir>/broker/kafka-data`` across stop/start."""
    info, alive = broker_status(state_dir)
    if info is not None and alive:
        raise BrokerAlreadyRunningError(info)
    broker_dir = state_dir / "broker"
    if kind == "kafka":
        from edge.broker.kafka import ApacheKafkaBroker

        data_dir = broker_dir / "kafka-data"
        last_port = data_dir / "last-port"
        if port is None and last_port.is_file():
            with contextlib.suppress(ValueError):
                previous = int(last_port.read_text().strip())
                port = previous if port_is_free(LOOPBACK, previous) else None
        info = ApacheKafkaBroker(
            port=port, data_dir=data_dir, log_dir=broker_dir, state_dir=state_dir, detached=True
        ).start()
        last_port.write_text(str(info.port))
    elif kind == "tansu":
        info = EmbeddedBroker(port=port, log_dir=broker_dir, detached=True).start()
    else:
        raise BrokerError(f"unknown broker kind {kind!r}; expected tansu or kafka")
    path = _record_path(state_dir)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(info), indent=2))
    tmp.replace(path)
    return info


def ensure_recorded_broker(state_dir: Path, kind: str = "tansu") -> tuple[BrokerInfo, bool]:
    """Reuse the recorded broker if it is alive (and of ``kind``), else start one; (info, started_now)."""
    info, alive = broker_status(state_dir)
    if info is not None and alive:
        if info.kind != kind:
            raise BrokerError(
                f"the recorded broker at {info.bootstrap_servers} is {info.kind}, not {kind}; stop it "
                f"(`streamhouse broker stop`) or set STREAMHOUSE_BROKER_KIND={info.kind}"
            )
        return info, False
    return start_recorded_broker(state_dir, kind=kind), True


def stop_recorded_broker(state_dir: Path, timeout_s: float | None = None) -> BrokerInfo:
    info = read_record(state_dir)
    if info is None:
        raise BrokerNotRunningError(f"no local broker is recorded under {state_dir}; nothing to stop")
    if _pid_alive(info.pid):
        # Apache Kafka shuts down in a controlled way (it flushes its logs); give it longer.
        _terminate(info.pid, timeout_s if timeout_s is not None else (30.0 if info.kind == "kafka" else 10.0))
    _record_path(state_dir).unlink(missing_ok=True)
    return info
