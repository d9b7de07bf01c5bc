"""A Spark standalone cluster on loopback (a master and N workers, separate JVMs) from the installed PySpark.

The lakehouse selects its cluster by ``spark.master`` alone (``STREAMHOUSE_SPARK_MASTER``); this helper
exists so that claim is proven beyond ``local[*]``: the daily job's driver then ships its tasks over the
network to executor JVMs that the workers launch, each running its own Python workers, exactly as on a
real cluster. Only the machine is shared: the lake root (a local path here, an object store elsewhere),
the Delta jars (shipped by the driver through ``spark.jars``) and the Python environment (the executors
run ``PYSPARK_PYTHON``, the driver's interpreter path, which exists on this machine).

It runs PySpark's own ``bin/spark-class`` (``org.apache.spark.deploy.master.Master`` and ``...worker.Worker
spark://127.0.0.1:PORT``) with small daemons (256 MB each) and workers of 1 core and 1 GB by default,
waits until the master's JSON status (``http://127.0.0.1:<web port>/json/``) lists every worker ALIVE,
and stops them with SIGTERM (SIGKILL after a grace period). Usable as a context manager.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from assets.spark.errors import SparkSetupError
from assets.spark.session import check_java

LOOPBACK = "127.0.0.1"
#: the standalone daemons' own heap (they only schedule; Spark's default is 1 GB each)
DAEMON_MEMORY = "256m"


class SparkClusterError(SparkSetupError):
    """The local standalone cluster could not start; the message says why and where its logs are."""


def spark_home() -> Path:
    """The installed PySpark: its ``bin/spark-class`` and ``jars/`` are laid out as a Spark distribution."""
    import pyspark

    home = Path(pyspark.__file__).resolve().parent
    if not (home / "bin" / "spark-class").is_file() or not (home / "jars").is_dir():
        raise SparkClusterError(
            f"{home} has no bin/spark-class or jars/: is PySpark installed from its wheel?"
        )
    return home


def _free_port() -> int:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


class SparkStandaloneCluster:
    """A standalone master and ``workers`` workers on 127.0.0.1; ``master_url`` is the ``spark.master``.

    ``work_dir`` holds the daemons' logs and the workers' application directories (executor logs);
    without one a temporary directory is used and removed on ``stop()`` (unless ``keep_work_dir``).
    """

    def __init__(
        self,
        workers: int = 2,
        *,
        worker_cores: int = 1,
        worker_memory: str = "1g",
        work_dir: Path | None = None,
        startup_timeout_s: float = 120.0,
        keep_work_dir: bool = False,
    ) -> None:
        if workers < 1 or worker_cores < 1:
            raise SparkClusterError(
                f"a cluster needs >= 1 worker of >= 1 core, got {workers} x {worker_cores}"
            )
        self.workers = workers
        self.worker_cores = worker_cores
        self.worker_memory = worker_memory
        self.work_dir = work_dir
        self.startup_timeout_s = startup_timeout_s
        self.keep_work_dir = keep_work_dir
        self.master_port = 0
        self.web_port = 0
        self._processes: list[subprocess.Popen[bytes]] = []
        self._temp: Path | None = None
        #: Seconds the last ``start()`` took until every worker was registered ALIVE.
        self.start_seconds = 0.0

    @property
    def master_url(self) -> str:
        return f"spark://{LOOPBACK}:{self.master_port}"

    @property
    def web_url(self) -> str:
        return f"http://{LOOPBACK}:{self.web_port}"

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self._processes]

    def _root(self) -> Path:
        if self.work_dir is not None:
            self.work_dir.mkdir(parents=True, exist_ok=True)
            return self.work_dir
        if self._temp is None:
            self._temp = Path(tempfile.mkdtemp(prefix="streamhouse-spark-cluster-"))
        return self._temp

    def _env(self) -> dict[str, str]:
        home = spark_home()
        return {
            **os.environ,
            "SPARK_HOME": str(home),
            # bind and advertise loopback (else Spark picks the first non-loopback interface and warns)
            "SPARK_LOCAL_IP": LOOPBACK,
            "SPARK_MASTER_HOST": LOOPBACK,
            "SPARK_DAEMON_MEMORY": DAEMON_MEMORY,
            "SPARK_NO_DAEMONIZE": "1",
            # no REST submission server (fixed port 6066: a second cluster, or anything else there, clashes)
            "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
        }

    def _spawn(self, args: list[str], log: Path, env: dict[str, str]) -> None:
        cmd = [str(spark_home() / "bin" / "spark-class"), *args]
        with open(log, "ab") as out:
            self._processes.append(
                subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
            )

    def status(self) -> dict[str, Any] | None:
        """The master's JSON status (workers, applications), or None while it does not answer."""
        try:
            with urllib.request.urlopen(f"{self.web_url}/json/", timeout=2) as resp:
                return dict(json.loads(resp.read()))
        except (OSError, ValueError, urllib.error.URLError):
            return None

    def alive_workers(self) -> int:
        status = self.status() or {}
        return sum(1 for w in status.get("workers", []) if w.get("state") == "ALIVE")

    def start(self) -> str:
        """Start the master, then the workers; return the master URL once every worker is ALIVE."""
        if self._processes:
            return self.master_url
        check_java()
        root = self._root()
        env = self._env()
        self.master_port, self.web_port = _free_port(), _free_port()
        started = time.monotonic()
        master_log = root / "master.log"
        self._spawn(
            [
                "org.apache.spark.deploy.master.Master",
                "--host",
                LOOPBACK,
                "--port",
                str(self.master_port),
                "--webui-port",
                str(self.web_port),
            ],
            master_log,
            env,
        )
        logs = [master_log]
        for i in range(1, self.workers + 1):
            work = root / f"worker-{i}"
            work.mkdir(parents=True, exist_ok=True)
            logs.append(root / f"worker-{i}.log")
            self._spawn(
                [
                    "org.apache.spark.deploy.worker.Worker",
                    "--host",
                    LOOPBACK,
                    "--cores",
                    str(self.worker_cores),
                    "--memory",
                    self.worker_memory,
                    "--webui-port",
                    str(_free_port()),
                    "--work-dir",
                    str(work),
                    self.master_url,
                ],
                logs[-1],
                env,
            )
        deadline = started + self.startup_timeout_s
        while self.alive_workers() < self.workers:
            dead = [(p, log) for p, log in zip(self._processes, logs, strict=True) if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                self.stop()
                if dead:
                    proc, log = dead[0]
                    raise SparkClusterError(
                        f"a Spark standalone daemon exited with code {proc.returncode} during start-up; "
                        f"{log} ends with:\n{_tail(log)}"
                    )
                raise SparkClusterError(
                    f"{self.workers} Spark workers were not ALIVE at {self.web_url} within "
                    f"{self.startup_timeout_s:.0f}s; see the logs under {root}"
                )
            time.sleep(0.5)
        self.start_seconds = time.monotonic() - started
        return self.master_url

    def stop(self, timeout_s: float = 20.0) -> None:
        """SIGTERM every daemon (workers first, so they do not look for a new master), SIGKILL stragglers."""
        processes, self._processes = self._processes, []
        for proc in reversed(processes):
            if proc.poll() is None:
                proc.terminate()
        deadline = time.monotonic() + timeout_s
        for proc in processes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(max(0.1, deadline - time.monotonic()))
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
        temp, self._temp = self._temp, None
        if temp is not None and not self.keep_work_dir:
            shutil.rmtree(temp, ignore_errors=True)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
