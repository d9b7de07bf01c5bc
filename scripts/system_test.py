#!/usr/bin/env python3
"""Kafka's Streams system tests against Streamhouse's ports of their clients (``make system-test``).

Kafka's ``streams_smoke_test.py`` and ``streams_eos_test.py`` (ducktape) start Java clients and drivers
from the ``kafka-streams`` test jar on a cluster and grep the drivers' stdout for the verdict. This runner
does the same on one local Apache Kafka broker (``edge.broker.ApacheKafkaBroker``), with the clients
replaced by the edge ports in ``examples/system_tests`` and the drivers left as Kafka ships them
(resolved by ``scripts/install_kafka_streams_tests.py`` into ``<state_dir>/jvm/kafka-streams-tests``):

* smoke: the processor 1 -> 2 -> 3 sequence of ``StreamsSmokeTest.test_streams`` (start one, start the
  driver, see it process, stop it -- SIGKILL when ``crash``, else SIGTERM -- start the next, ...), for
  ``at_least_once`` and ``exactly_once_v2``; the verdict is the driver's ``SUCCESS`` / ``FAILURE`` (a
  crash under at-least-once also passes on ``PROCESSED-MORE-THAN-GENERATED``, as in Kafka's test);
* eos: ``run_rebalance`` / ``run_failure_and_recovery`` (clean stops / kill -9 of 3 instances while the
  driver produces), then ``StreamsEosTest verify`` (or ``verify-complex``), which must print
  ``ALL-RECORDS-DELIVERED``.

"short" scenarios are the CI's form (fewer records through ``jvm/kafka-streams-tests/
SizedSmokeTestDriver.java``, which calls the same driver methods as Kafka's main, and fewer
instances); "full" ones run Kafka's mains at their own size. Every scenario gets a fresh broker, since
the drivers hard-code the topics and group ids. ``--report docs/reliability.md`` writes the verdicts
and timings into that file's ``kafka_streams_system_tests`` section.

    .venv/bin/python scripts/system_test.py --scenarios short [--report docs/reliability.md]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime as dt
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from edge.broker import ApacheKafkaBroker, kafka_unavailable_reason  # noqa: E402
from edge.broker.kafka import resolve_java  # noqa: E402
from edge.kafka import BrokerProfile, KafkaClientConfig, TopicSpec, create_topics  # noqa: E402

SUBDIR = Path("jvm") / "kafka-streams-tests"
SIZED_DRIVER = ROOT / "jvm" / "kafka-streams-tests" / "SizedSmokeTestDriver.java"
SIZED_MAIN = "SizedSmokeTestDriver"
SMOKE_MAIN = "org.apache.kafka.streams.tests.StreamsSmokeTest"
EOS_MAIN = "org.apache.kafka.streams.tests.StreamsEosTest"
SABOTAGE_ENV = "STREAMHOUSE_SYSTEM_TEST_SABOTAGE"
SECTION = "kafka_streams_system_tests"
PARTITIONS = 5

#: ``streams_smoke_test.py``'s topics (5 partitions each), plus ``fk``, which the driver also writes.
SMOKE_TOPICS = [
    "echo", "data", "min", "min-suppressed", "min-raw", "max", "sum", "sws-raw", "sws-suppressed",
    "dif", "cnt", "avg", "wcnt", "tagg", "fk",
]  # fmt: skip
#: ``streams_eos_test.py``'s topics.
EOS_TOPICS = ["data", "echo", "min", "sum", "repartition", "max", "cnt"]


class ScenarioError(Exception):
    """A step of a scenario did not happen (a line never printed, a process that would not stop)."""


def _state_dir() -> Path:
    return Path(os.environ.get("STREAMHOUSE_STATE_DIR") or ROOT / ".state")


def drivers_unavailable_reason() -> str | None:
    """Why Kafka's drivers cannot run here (no test jars, no Java, no broker), or None."""
    home = _state_dir() / SUBDIR
    try:
        record = json.loads((home / "install.json").read_text())
    except FileNotFoundError:
        return (
            f"Kafka Streams' system-test drivers are not installed ({home}); `make install` resolves them "
            "with Maven (jvm/kafka-streams-tests/pom.xml)"
        )
    except (OSError, ValueError) as exc:
        return f"{home / 'install.json'} is unreadable ({exc})"
    if record.get("status") != "ok" or not any((home / "libs").glob("kafka-streams-*-test.jar")):
        return f"Kafka Streams' system-test drivers are unavailable: {record.get('reason') or 'no test jar'}"
    return kafka_unavailable_reason()


def driver_classpath() -> str:
    return str(_state_dir() / SUBDIR / "libs" / "*")


def compiled_sized_driver(java: str) -> Path | None:
    """``SizedSmokeTestDriver.java`` compiled once into the state dir (a source launch compiles it at
    every start: 10-15 s of a loaded 2-core machine per scenario); None without a ``javac``."""
    javac = Path(java).with_name("javac")
    if not os.access(javac, os.X_OK):
        return None
    classes = _state_dir() / SUBDIR / "classes"
    target = classes / f"{SIZED_MAIN}.class"
    if target.exists() and target.stat().st_mtime >= SIZED_DRIVER.stat().st_mtime:
        return classes
    tmp = Path(tempfile.mkdtemp(prefix="classes-", dir=classes.parent))
    proc = subprocess.run(
        [str(javac), "-nowarn", "-cp", driver_classpath(), "-d", str(tmp), str(SIZED_DRIVER)],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        return None
    shutil.rmtree(classes, ignore_errors=True)
    tmp.rename(classes)
    return classes


@dataclasses.dataclass(frozen=True)
class Scenario:
    """One run of a Kafka system test: which test, guarantee, how many instances, how they stop."""

    name: str
    test: str  # "smoke" | "eos"
    guarantee: str = "at_least_once"
    #: smoke: instances started one after the other (1 -> 2 -> 3); eos: the sequence's instances
    instances: int = 1
    crash: bool = False
    #: eos only: process-complex / verify-complex (a user repartition topic, max and cnt)
    complex: bool = False
    #: "short": CI size; "full": Kafka's own sizes
    size: str = "short"
    #: the aggregate the clients compute wrong on purpose (``STREAMHOUSE_SYSTEM_TEST_SABOTAGE``)
    sabotage: str = ""

    @property
    def expected(self) -> str:
        """The verdict a correct client earns: a sabotaged one must make the driver say FAILURE."""
        return "FAILURE" if self.sabotage else "SUCCESS"

    def describe(self) -> str:
        stops = "kill -9" if self.crash else "clean stops"
        shape = f"{self.instances} instance{'s' if self.instances > 1 else ''}"
        extra = ", complex" if self.complex else ""
        sab = f", sabotaged {self.sabotage}" if self.sabotage else ""
        return f"{self.test} {self.guarantee}, {shape}, {stops}{extra}, {self.size}{sab}"


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in [
        # the CI's short form
        Scenario("smoke-alos-1", "smoke", "at_least_once", 1),
        Scenario("smoke-eos-1", "smoke", "exactly_once_v2", 1),
        Scenario("smoke-alos-kill", "smoke", "at_least_once", 2, crash=True),
        Scenario("smoke-alos-sabotaged", "smoke", "at_least_once", 1, sabotage="sum"),
        Scenario("eos-1", "eos", "exactly_once_v2", 1),
        Scenario("eos-kill", "eos", "exactly_once_v2", 2, crash=True),
        Scenario("eos-sabotaged", "eos", "exactly_once_v2", 1, sabotage="sum"),
        # Kafka's matrix at Kafka's sizes
        *[
            Scenario(
                f"smoke-{g}-{'crash' if crash else 'clean'}-full", "smoke", guarantee, 3, crash, size="full"
            )
            for guarantee, g in (("at_least_once", "alos"), ("exactly_once_v2", "eos"))
            for crash in (False, True)
        ],
        *[
            Scenario(
                f"eos-{kind}{'-complex' if cx else ''}-full",
                "eos",
                "exactly_once_v2",
                3,
                kind == "kill",
                cx,
                "full",
            )
            for kind in ("rebalance", "kill")
            for cx in (False, True)
        ],
    ]
}
GROUPS = {
    "short": ["smoke-alos-1", "smoke-eos-1", "smoke-alos-kill", "smoke-alos-sabotaged", "eos-1", "eos-kill",
              "eos-sabotaged"],
    "full": [n for n, s in SCENARIOS.items() if s.size == "full"],
}  # fmt: skip
GROUPS["all"] = GROUPS["short"] + GROUPS["full"]


@dataclasses.dataclass
class Result:
    scenario: Scenario
    #: the driver's verdict: SUCCESS / FAILURE (smoke), ALL-RECORDS-DELIVERED or FAILURE (eos), or
    #: INVALID (a step of the sequence failed, e.g. the driver finished before the instances rotated)
    verdict: str
    #: Kafka's test would pass this run (its grep: SUCCESS, PROCESSED-MORE-THAN-GENERATED after a
    #: crash under at-least-once, ALL-RECORDS-DELIVERED for EOS)
    accepted: bool
    seconds: float
    detail: str
    workdir: Path
    #: when the scenario finished (the report's "run" column)
    finished: str = dataclasses.field(default_factory=lambda: f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC")

    @property
    def as_expected(self) -> bool:
        """A faithful client passes Kafka's check; a sabotaged one makes the driver say FAILURE."""
        if self.scenario.sabotage:
            return self.verdict == "FAILURE"
        return self.accepted


class Proc:
    """One process of a scenario, its stdout appended to a file the way ducktape's services do, so a
    restarted instance keeps one log; ``mark()`` + ``wait_for`` is ducktape's ``monitor_log``."""

    def __init__(self, name: str, workdir: Path) -> None:
        self.name = name
        self.dir = workdir / name
        self.dir.mkdir(parents=True, exist_ok=True)
        self.stdout = self.dir / "stdout.log"
        self.stderr = self.dir / "stderr.log"
        self.stdout.touch()
        self.popen: subprocess.Popen[bytes] | None = None

    def start(self, cmd: list[str], env: dict[str, str] | None = None) -> None:
        with open(self.stdout, "ab") as out, open(self.stderr, "ab") as err:
            self.popen = subprocess.Popen(
                cmd, stdout=out, stderr=err, cwd=ROOT, env=env, start_new_session=True
            )

    def mark(self) -> int:
        return self.stdout.stat().st_size

    def text(self, since: int = 0) -> str:
        with open(self.stdout, "rb") as f:
            f.seek(since)
            return f.read().decode("utf-8", "replace")

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def wait_for(self, pattern: str, *, since: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        regex = re.compile(pattern)
        while True:
            if regex.search(self.text(since)):
                return
            if time.monotonic() > deadline:
                raise ScenarioError(
                    f"{self.name}: never saw {pattern!r} within {timeout:.0f} s ({self.stdout})"
                )
            if not self.alive() and not regex.search(self.text(since)):
                raise ScenarioError(
                    f"{self.name}: exited ({self.exit_code()}) without {pattern!r} ({self.stderr})"
                )
            time.sleep(0.2)

    def exit_code(self) -> int | None:
        return None if self.popen is None else self.popen.poll()

    def stop(self, *, clean: bool = True, timeout: float = 120.0) -> None:
        """SIGTERM and wait (``stop_node(clean_shutdown=True)``) or SIGKILL (``False``)."""
        if not self.alive():
            return
        assert self.popen is not None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.popen.pid, signal.SIGTERM if clean else signal.SIGKILL)
        try:
            self.popen.wait(timeout if clean else 10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait(10)
            raise ScenarioError(f"{self.name}: took over {timeout:.0f} s to exit on SIGTERM") from None

    def wait(self, timeout: float) -> int:
        assert self.popen is not None
        try:
            return self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            raise ScenarioError(f"{self.name}: still running after {timeout:.0f} s ({self.stdout})") from None


def _write_props(path: Path, props: dict[str, object]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return path


class Run:
    """One scenario on its own broker: topics, property files, the Java drivers and the Python clients."""

    def __init__(self, scenario: Scenario, workdir: Path, bootstrap: str, log: Callable[[str], None]) -> None:
        self.sc = scenario
        self.workdir = workdir
        self.bootstrap = bootstrap
        self.log = log
        self.java = resolve_java()
        self.procs: list[Proc] = []
        #: wait-time multiplier: Kafka's timeouts assume a JVM client on a quiet node; this machine is
        #: shared, and a Python instance takes longer to import and join
        self.slack = float(os.environ.get("SYSTEM_TEST_TIMEOUT_SCALE", "2"))

    # -- processes ------------------------------------------------------------------------------------
    def proc(self, name: str) -> Proc:
        p = Proc(name, self.workdir)
        self.procs.append(p)
        return p

    def java_cmd(self, *args: str) -> list[str]:
        return [self.java, "-Xmx256m", "-Xms32m", "-XX:+UseSerialGC", "-cp", driver_classpath(), *args]

    def client_env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
        env["PYTHONUNBUFFERED"] = "1"
        env.pop(SABOTAGE_ENV, None)
        if self.sc.sabotage:
            env[SABOTAGE_ENV] = self.sc.sabotage
        return env

    def start_client(self, node: Proc, module: str, *args: str) -> None:
        """``StreamsTestBaseService.start_node``: start, then wait for the start banner."""
        since = node.mark()
        node.start([sys.executable, "-m", module, *args], self.client_env())
        node.wait_for("StreamsTest instance started", since=since, timeout=60 * self.slack)

    def cleanup(self) -> None:
        for p in self.procs:
            with contextlib.suppress(Exception):
                p.stop(clean=False)

    # -- smoke ------------------------------------------------------------------------------------------
    def smoke_client_props(self, node: str) -> Path:
        """``StreamsSmokeTestBaseService.prop_file``; replication 1 (one broker) instead of 3."""
        return _write_props(
            self.workdir / node / "streams.properties",
            {
                "state.dir": self.workdir / node / "state",
                "bootstrap.servers": self.bootstrap,
                "processing.guarantee": self.sc.guarantee,
                "num.stream.threads": 3,
                "replication.factor": 1,
                "num.standby.replicas": 2,
                "buffered.records.per.partition": 100,
                "commit.interval.ms": 1000,
                "auto.offset.reset": "earliest",
                "acks": "all",
                "acceptable.recovery.lag": "9223372036854775807",
                "session.timeout.ms": "10000",
            },
        )

    def smoke_driver_cmd(self, props: Path) -> list[str]:
        if self.sc.size == "full":
            return self.java_cmd(SMOKE_MAIN, str(props), "run")
        keys, per_key, seconds = (10, 300, 45) if self.sc.instances > 1 else (10, 150, 15)
        sized = [str(keys), str(per_key), str(seconds)]
        classes = compiled_sized_driver(self.java)
        if classes is None:  # no javac: Java compiles the source file in memory at every start
            return self.java_cmd(str(SIZED_DRIVER), str(props), *sized)
        cp = f"{classes}{os.pathsep}{driver_classpath()}"
        return [
            self.java,
            "-Xmx256m",
            "-Xms32m",
            "-XX:+UseSerialGC",
            "-cp",
            cp,
            SIZED_MAIN,
            str(props),
            *sized,
        ]

    def smoke(self) -> tuple[str, bool, str]:
        """``StreamsSmokeTest.test_streams``: instances one after the other, the last stopped cleanly."""
        driver_props = _write_props(
            self.workdir / "driver" / "streams.properties",
            {"bootstrap.servers": self.bootstrap, "processing.guarantee": self.sc.guarantee},
        )
        driver = self.proc("driver")
        n = self.sc.instances
        for i in range(1, n + 1):
            node = self.proc(f"processor{i}")
            self.log(f"  starting processor{i}")
            self.start_client(
                node, "examples.system_tests.smoke_client", str(self.smoke_client_props(node.name))
            )
            node.wait_for("REBALANCING -> RUNNING", since=0, timeout=(60 if i == 1 else 120) * self.slack)
            if i == 1:
                self.log("  starting the driver")
                driver.start(self.smoke_driver_cmd(driver_props))
            node.wait_for("processed", since=0, timeout=30 * self.slack)
            if i < n:
                if "Result Verification" in driver.text():
                    raise ScenarioError("the driver finished before the instances rotated (test invalid)")
                self.log(f"  {'killing (-9)' if self.sc.crash else 'stopping'} processor{i}")
                node.stop(clean=not self.sc.crash)
        limit = (1440 if self.sc.size == "full" else 420) * self.slack
        self.log("  waiting for the driver's verdict")
        driver.wait(limit)
        self.procs[-1].stop(clean=True)
        out = driver.text()
        lines = out.splitlines()
        verdict = next((ln for ln in reversed(lines) if ln in ("SUCCESS", "FAILURE")), "INVALID")
        # Kafka's test accepts 'SUCCESS|PROCESSED-MORE-THAN-GENERATED' after a crash under at-least-once
        # (outputs may repeat); the raw verdict is what the report shows
        accepted = verdict == "SUCCESS"
        if self.sc.crash and self.sc.guarantee == "at_least_once":
            accepted = accepted or "PROCESSED-MORE-THAN-GENERATED" in lines
        notes = [ln for ln in lines if ln.startswith(("recordGenerated", "recordProcessed", "PROCESSED-"))]
        notes += [ln.strip() for ln in lines if " fail" in ln or ln.startswith("fail:")][:3]
        if "ALL-RECORDS-DELIVERED" in lines:
            notes.append("ALL-RECORDS-DELIVERED")
        return verdict, accepted, "; ".join(notes)

    # -- eos --------------------------------------------------------------------------------------------
    def eos_props(self, node: str) -> Path:
        """``StreamsEosTestBaseService.prop_file`` (+ replication 1: one broker)."""
        return _write_props(
            self.workdir / node / "streams.properties",
            {
                "state.dir": self.workdir / node / "state",
                "bootstrap.servers": self.bootstrap,
                "processing.guarantee": "exactly_once_v2",
                "acceptable.recovery.lag": "9223372036854775807",
                "session.timeout.ms": "10000",
                "replication.factor": 1,
            },
        )

    def eos(self) -> tuple[str, bool, str]:
        """``StreamsEosTest.run_rebalance`` / ``run_failure_and_recovery`` (or a short form), then verify."""
        timeout = 480 * self.slack
        command = "process-complex" if self.sc.complex else "process"
        nodes = [self.proc(f"processor{i}") for i in range(1, max(self.sc.instances, 1) + 1)]

        def start(p: Proc) -> None:
            self.log(f"  starting {p.name}")
            self.start_client(p, "examples.system_tests.eos_client", str(self.eos_props(p.name)), command)

        def wait_for_startup(p: Proc, since: int) -> None:
            p.wait_for("StateChange: REBALANCING -> RUNNING", since=since, timeout=timeout)
            p.wait_for("processed [0-9]* records from topic", since=since, timeout=timeout)

        def add(new: Proc, *running: Proc) -> None:
            marks = [(p, p.mark()) for p in running]
            mark = new.mark()
            start(new)
            wait_for_startup(new, mark)
            for p, m in reversed(marks):
                wait_for_startup(p, m)

        def stop(victim: Proc, *keep: Proc) -> None:
            marks = [(p, p.mark()) for p in keep]
            mark = victim.mark()
            self.log(f"  stopping {victim.name}")
            victim.stop(clean=True)
            victim.wait_for("StateChange: PENDING_SHUTDOWN -> NOT_RUNNING", since=mark, timeout=timeout)
            for p, m in reversed(marks):
                wait_for_startup(p, m)

        def abort(victim: Proc, *keep: Proc) -> None:
            marks = [(p, p.mark()) for p in keep]
            self.log(f"  killing (-9) {victim.name}")
            victim.stop(clean=False)
            for p, m in reversed(marks):
                wait_for_startup(p, m)

        driver_props = self.eos_props("driver")
        driver = self.proc("driver")
        driver.start(self.java_cmd(EOS_MAIN, str(driver_props), "run"))
        driver.wait_for("StreamsTest instance started", since=0, timeout=60 * self.slack)
        if self.sc.size == "full":
            p1, p2, p3 = nodes
            add(p1)
            add(p2, p1)
            add(p3, p2, p1)
            if self.sc.crash:  # run_failure_and_recovery
                abort(p1, p2, p3)
                add(p1, p3, p2)
                abort(p1, p2, p3)
                add(p1, p3, p2)
                abort(p2, p1, p3)
            else:  # run_rebalance
                stop(p1, p2, p3)
                add(p1, p3, p2)
                stop(p2, p1, p3)
            stop(p3, p1)
            stop(p1)
        elif self.sc.instances == 1:
            add(nodes[0])
            time.sleep(10)
            stop(nodes[0])
        else:  # short kill: two instances, one killed mid-transaction and restarted, then both stopped
            p1, p2 = nodes
            add(p1)
            add(p2, p1)
            time.sleep(3)
            abort(p2, p1)
            add(p2, p1)
            stop(p2, p1)
            stop(p1)
        self.log("  stopping the driver")
        driver.stop(clean=True, timeout=300)
        verifier = self.proc("verifier")
        self.log("  running the verifier")
        verifier.start(
            self.java_cmd(EOS_MAIN, str(driver_props), "verify-complex" if self.sc.complex else "verify")
        )
        verifier.wait(900 if self.sc.size == "full" else 300)
        out = verifier.text()
        if "ALL-RECORDS-DELIVERED" in out.splitlines():
            return "ALL-RECORDS-DELIVERED", True, ""
        err = verifier.stderr.read_text(errors="replace")
        reason = next(
            (ln.strip() for ln in err.splitlines() if "Exception:" in ln or "verification failed" in ln), ""
        )
        # "Result verification failed for ConsumerRecord(topic = sum, partition = 3, ...) expected <k,v> but
        # was <k,w>": keep the topic, the partition and the two values
        pattern = r"(Result verification failed).*?topic = (\S+), partition = (\d+).*?(expected <.*)"
        m = re.search(pattern, reason)
        if m:
            reason = f"{m.group(1)} on {m.group(2)}-{m.group(3)}: {m.group(4)}"
        return "FAILURE", False, reason[:300]


@contextlib.contextmanager
def broker_for(workdir: Path) -> Iterator[str]:
    broker = ApacheKafkaBroker(data_dir=workdir / "broker", log_dir=workdir / "broker")
    broker.start()
    try:
        yield broker.bootstrap_servers
    finally:
        broker.stop()


def run_scenario(scenario: Scenario, workdir: Path, log: Callable[[str], None] = print) -> Result:
    """Run one scenario on a fresh broker; the verdict is what Kafka's driver printed."""
    workdir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with broker_for(workdir) as bootstrap:
        topics = SMOKE_TOPICS if scenario.test == "smoke" else EOS_TOPICS
        create_topics(
            KafkaClientConfig(bootstrap, BrokerProfile.REAL), [TopicSpec(t, PARTITIONS) for t in topics]
        )
        run = Run(scenario, workdir, bootstrap, log)
        try:
            verdict, accepted, detail = run.smoke() if scenario.test == "smoke" else run.eos()
        except ScenarioError as exc:
            verdict, accepted, detail = "INVALID", False, str(exc)
        finally:
            run.cleanup()
    return Result(scenario, verdict, accepted, round(time.monotonic() - started, 1), detail, workdir)


# -- the report -------------------------------------------------------------------------------------------
_INTRO = """Kafka's own Streams system tests (`streams_smoke_test.py`, `streams_eos_test.py`) with the Java
clients replaced by their edge ports (`examples/system_tests/`) and the verdict given by Kafka's drivers
from `org.apache.kafka:kafka-streams:4.1.1:test` (`SmokeTestDriver`, `EosTestDriver`), on one local
Apache Kafka 4.1.1 broker, a fresh one per scenario. Written by `make system-test`
(`scripts/system_test.py`); "short" rows are the CI's sizes (smoke: 10 keys x 150 values over 15 s with
one instance, 10 x 300 over 45 s when the first instance is killed -9 and a second finishes; EOS: one
instance for about 10 s, or two with one killed -9 mid-transaction and restarted), "full" rows Kafka's
(smoke: 20 keys x 1000 values over 90 s, the processor 1 -> 2 -> 3 sequence; EOS: 3 instances added,
stopped or killed -9 in `run_rebalance` / `run_failure_and_recovery`'s order while the driver produces,
then `verify` / `verify-complex`). "seconds" includes the broker's start. A sabotaged client (every
`sum` one less) must make the driver say FAILURE; the smoke driver retries 30 x 5 s before it does.
"""


def write_report(path: Path, results: list[Result]) -> None:
    """Replace this runner's rows for the scenarios just run in ``path``'s section; keep the rest."""
    text = path.read_text() if path.exists() else ""
    heading = re.compile(rf"^## {SECTION}\s*$", re.MULTILINE)
    m = heading.search(text)
    old_rows: dict[str, str] = {}
    if m:
        nxt = re.compile(r"^## ", re.MULTILINE).search(text, m.end())
        body_end = nxt.start() if nxt else len(text)
        for line in text[m.end() : body_end].splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if line.startswith("| ") and cells and cells[0] in SCENARIOS:
                old_rows[cells[0]] = line
        before, after = text[: m.start()], text[body_end:]
    else:
        before, after = text.rstrip("\n") + "\n\n" if text else "", ""
    for r in results:
        old_rows[r.scenario.name] = (
            f"| {r.scenario.name} | {r.scenario.describe()} | {r.scenario.expected} | {r.verdict} | "
            f"{'yes' if r.as_expected else '**no**'} | {r.seconds} | {r.detail.replace('|', '/')} "
            f"| {r.finished} |"
        )
    order = [n for n in SCENARIOS if n in old_rows]
    table = [
        "| scenario | what | expected | driver said | as expected | seconds | driver notes | run |",
        "|---|---|---|---|---|---|---|---|",
        *(old_rows[n] for n in order),
    ]
    section = f"## {SECTION}\n\n{_INTRO}\n" + "\n".join(table) + "\n"
    path.write_text(before + section + ("\n" + after if after else ""))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--scenarios", default="short", help=f"a group ({', '.join(GROUPS)}) or names, comma-separated"
    )
    parser.add_argument(
        "--report", type=Path, default=None, help="write the verdicts into this markdown file"
    )
    parser.add_argument("--workdir", type=Path, default=None, help="default: a new temporary directory")
    parser.add_argument("--list", action="store_true", help="list the scenarios and exit")
    args = parser.parse_args(argv)
    if args.list:
        for name, sc in SCENARIOS.items():
            print(f"{name:28} {sc.describe()}")
        return 0
    names = GROUPS.get(args.scenarios) or [n.strip() for n in args.scenarios.split(",") if n.strip()]
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        parser.error(f"unknown scenarios: {', '.join(unknown)} (see --list)")
    reason = drivers_unavailable_reason()
    if reason:
        print(f"skipped: {reason}", file=sys.stderr)
        return 0
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="streamhouse-system-test-"))
    results = []
    for name in names:
        sc = SCENARIOS[name]
        print(f"{name}: {sc.describe()}", flush=True)
        r = run_scenario(sc, workdir / name, log=lambda s: print(s, flush=True))
        print(
            f"{name}: driver said {r.verdict} (expected {sc.expected}) in {r.seconds} s"
            f"{': ' + r.detail if r.detail else ''}",
            flush=True,
        )
        results.append(r)
        if args.report:
            write_report(args.report, results)
    bad = [r for r in results if not r.as_expected]
    print(f"{len(results) - len(bad)}/{len(results)} scenarios as expected; logs in {workdir}")
    if not bad and args.workdir is None:
        shutil.rmtree(workdir, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
