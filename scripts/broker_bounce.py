#!/usr/bin/env python3
"""Kafka's ``streams_broker_bounce_test.py`` on a local 3-node cluster, judged by Kafka's smoke driver.

Kafka's test starts a 3-broker cluster (replication 3, ``min.insync.replicas`` 2), a SmokeTestClient
and the SmokeTestDriver, lets them run, then fails a broker: the leader of a partition of one of the
test's topics or the controller, by a clean shutdown (SIGTERM, left down), a hard shutdown (SIGKILL, left
down), a clean bounce or a hard bounce (restarted, chasing the leader, five times); the driver's verdict
must be SUCCESS. Here the client is the edge port (``examples/system_tests/smoke_client.py``, as in
``scripts/system_test.py``), the cluster ``edge.broker.cluster.KafkaCluster`` (three combined KRaft
nodes, so the active controller is also a broker), and the targets are

* ``read``: the leader of ``data``-0, the partition the app consumes;
* ``write``: the leader of an output partition (``max``), one led by another node than ``data``-0 when
  there is one, so that it is a different failure from ``read``;
* ``controller``: the KRaft quorum's leader, read from the nodes' ``quorum-state`` files.

Beyond Kafka's test, the app must never exit (checked at every bounce and before its final clean stop)
and each bounce's stall is measured: a read-committed consumer of ``echo`` (the input echoed, written
in the app's transactions under exactly-once) notes when records arrive; a bounce's stall is the
longest wait for the next record from the moment of the failure until the next failure (or the end of
the driver's production), which stays near the commit interval when nothing stops. A bounce waits for
every partition's ISR to be full again before the next one (a rolling restart's pace), so five bounces
never take two replicas of a partition away at once.

    .venv/bin/python scripts/broker_bounce.py --scenarios short [--report docs/reliability.md]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime as dt
import itertools
import json
import re
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for _p in (ROOT, ROOT / "scripts"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

import system_test as st  # noqa: E402
from confluent_kafka import Consumer  # noqa: E402
from confluent_kafka.admin import AdminClient  # noqa: E402

from edge.broker.cluster import KafkaCluster  # noqa: E402
from edge.kafka import BrokerProfile, KafkaClientConfig, TopicSpec, create_topics  # noqa: E402

SECTION = "broker_bounces"
MODES = ("clean_shutdown", "hard_shutdown", "clean_bounce", "hard_bounce")
GUARANTEES = (("at_least_once", "alos"), ("exactly_once_v2", "eos"))
TARGETS_ALL = ("read", "write", "controller")
#: Kafka's test: a bounce chases the leader five times
BOUNCES = 5
#: the smoke client's session timeout (``scripts/system_test.py``'s properties, as Kafka's test's)
SESSION_TIMEOUT_S = 10.0
#: the stall a bounce should cost: a session timeout plus a few seconds
STALL_LIMIT_S = SESSION_TIMEOUT_S + 5.0
#: the stall past which a run is a regression: a hard bounce of the group or transaction coordinator's
#: node adds the transaction timeout, librdkafka's client-side session timeout, a rejoin and a restore
#: (docs/reliability.md, "What a stall is made of") to the cluster's own 6 s failover
STALL_BOUND_S = 60.0


@dataclasses.dataclass(frozen=True)
class Step:
    """One failure: how (``MODES``), of which node (``TARGETS_ALL``), how many times in a row."""

    mode: str
    target: str
    times: int = 1

    def describe(self) -> str:
        times = f" x{self.times}" if self.times > 1 else ""
        what = "node" if self.target == "controller" else "leader"
        return f"{self.mode.replace('_', ' ')} of the {self.target} {what}{times}"


@dataclasses.dataclass(frozen=True)
class BounceScenario:
    name: str
    guarantee: str
    steps: tuple[Step, ...]
    size: str = "full"

    def describe(self) -> str:
        return f"{self.guarantee}: " + ", then ".join(s.describe() for s in self.steps)

    @property
    def actions(self) -> int:
        return sum(s.times for s in self.steps)


def _full() -> list[BounceScenario]:
    out = []
    for guarantee, g in GUARANTEES:
        for target in TARGETS_ALL:
            for mode in MODES:
                times = BOUNCES if mode.endswith("bounce") else 1
                out.append(BounceScenario(f"{mode}-{target}-{g}", guarantee, (Step(mode, target, times),)))
    return out


#: Four kinds of failure in one run: a clean and a hard bounce of a leader and of the controller.
MIXED_STEPS = (
    Step("clean_bounce", "read"),
    Step("hard_bounce", "controller"),
    Step("hard_bounce", "write"),
    Step("clean_bounce", "controller"),
)
#: The CI's form, two failures per guarantee: between them a clean and a hard bounce of a leader and
#: of the active controller, each guarantee through one clean and one hard bounce.
SHORT_STEPS = {
    "exactly_once_v2": (Step("hard_bounce", "controller"), Step("clean_bounce", "read")),
    "at_least_once": (Step("hard_bounce", "write"), Step("clean_bounce", "controller")),
}
SCENARIOS: dict[str, BounceScenario] = {
    s.name: s
    for s in [
        *[
            BounceScenario(f"short-{g}", guarantee, SHORT_STEPS[guarantee], "short")
            for guarantee, g in GUARANTEES
        ],
        *[BounceScenario(f"mixed-{g}", guarantee, MIXED_STEPS) for guarantee, g in GUARANTEES],
        *_full(),
    ]
}
GROUPS = {
    "short": [n for n, s in SCENARIOS.items() if s.size == "short"],
    "full": [n for n, s in SCENARIOS.items() if s.size == "full"],
}
GROUPS["all"] = GROUPS["short"] + GROUPS["full"]


# -- the cluster ------------------------------------------------------------------------------------------
def active_controller(cluster: KafkaCluster) -> int:
    """The KRaft quorum's leader: the highest-epoch ``leaderId`` in the running nodes' ``quorum-state``.

    Clients cannot ask (in KRaft a Metadata response names a random broker as "controller", and
    confluent-kafka has no DescribeQuorum); every voter writes the election state it learns to
    ``__cluster_metadata-0/quorum-state``, so the newest epoch's leader is the active controller.
    """
    best: tuple[int, int] | None = None
    for node in cluster.nodes:
        if not node.running:
            continue
        path = node.data_dir / "kafka-logs" / "__cluster_metadata-0" / "quorum-state"
        with contextlib.suppress(OSError, ValueError, KeyError):
            state = json.loads(path.read_text())
            epoch, leader = int(state["leaderEpoch"]), int(state["leaderId"])
            if leader > 0 and (best is None or epoch > best[0]):
                best = (epoch, leader)
    if best is None or not cluster.node(best[1]).running:
        raise st.ScenarioError(f"no running node is the quorum's leader (newest quorum-state: {best})")
    return best[1]


class ClusterView:
    """Which node to fail, and waits for the cluster to notice a failure and to heal."""

    def __init__(self, cluster: KafkaCluster) -> None:
        self.cluster = cluster
        self.admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, "log_level": 0})

    def leader(self, topic: str, partition: int) -> int:
        return int(self.admin.list_topics(timeout=10).topics[topic].partitions[partition].leader)

    def target(self, target: str) -> int:
        if target == "controller":
            return active_controller(self.cluster)
        read = self.leader("data", 0)
        if target == "read":
            return read
        parts = self.admin.list_topics(timeout=10).topics["max"].partitions
        others = [int(m.leader) for _, m in sorted(parts.items()) if int(m.leader) not in (read, -1)]
        return others[0] if others else int(parts[0].leader)

    def registered(self) -> set[int]:
        try:
            return set(self.admin.list_topics(timeout=5).brokers)
        except Exception:
            return set()

    def wait_deregistered(self, node_id: int, timeout: float) -> None:
        """Kafka's hard bounce waits until the killed broker's registration is gone (fenced in KRaft)."""
        deadline = time.monotonic() + timeout
        while node_id in self.registered():
            if time.monotonic() > deadline:
                raise st.ScenarioError(f"node {node_id} still registered {timeout:.0f} s after its kill")
            time.sleep(0.2)

    def wait_healed(self, timeout: float) -> None:
        """Until every node is registered and every partition's ISR holds all its replicas."""
        deadline = time.monotonic() + timeout
        while True:
            short: list[str] = []
            with contextlib.suppress(Exception):
                meta = self.admin.list_topics(timeout=10)
                short = [
                    f"{t}-{p}"
                    for t, tm in meta.topics.items()
                    for p, pm in tm.partitions.items()
                    if len(pm.isrs) < len(pm.replicas)
                ]
                if len(meta.brokers) == len(self.cluster.nodes) and not short:
                    return
            if time.monotonic() > deadline:
                raise st.ScenarioError(
                    f"the cluster did not heal within {timeout:.0f} s: short ISR {short[:5]}"
                )
            time.sleep(0.5)


# -- the stall --------------------------------------------------------------------------------------------
class OutputWatch:
    """Arrival times of ``echo`` records (read committed), from a thread of the runner's own."""

    def __init__(self, bootstrap: str) -> None:
        self.arrivals: list[float] = []
        self._stop = threading.Event()
        self._consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"bounce-watch-{time.time_ns()}",
                "auto.offset.reset": "latest",
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
                "log_level": 0,
            }
        )
        self._consumer.subscribe(["echo"])
        self._thread = threading.Thread(target=self._run, name="echo-watch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(Exception):
                for msg in self._consumer.consume(500, 0.2):
                    if msg.error() is None:
                        self.arrivals.append(time.monotonic())
                        break  # one arrival per batch is enough for gaps

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)
        with contextlib.suppress(Exception):
            self._consumer.close()


def stall(arrivals: list[float], start: float, end: float) -> float:
    """The longest wait for an output record within [start, end): from ``start`` to the first arrival,
    then between arrivals; ``end - start`` when nothing arrived at all."""
    times = [t for t in arrivals if start <= t < end]
    if not times:
        return end - start
    gaps = [times[0] - start, *(b - a for a, b in itertools.pairwise(times))]
    return max(gaps)


# -- the run ----------------------------------------------------------------------------------------------
@dataclasses.dataclass
class Bounce:
    mode: str
    target: str
    node: int
    at: float
    #: seconds until the cluster had noticed (hard) and the node was back with full ISRs (bounces)
    healed_s: float
    stall_s: float = 0.0


@dataclasses.dataclass
class BounceResult:
    scenario: BounceScenario
    verdict: str
    accepted: bool
    seconds: float
    detail: str
    workdir: Path
    bounces: list[Bounce]
    app_exited: bool
    finished: str = dataclasses.field(default_factory=lambda: f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC")

    @property
    def max_stall(self) -> float:
        return max((b.stall_s for b in self.bounces), default=0.0)

    @property
    def as_expected(self) -> bool:
        """Kafka's test passes (the driver's verdict) and the app never exited."""
        return self.accepted and not self.app_exited

    @property
    def stalls_within_limit(self) -> bool:
        """Every failure's stall within the session timeout + 5 s (the issue's target)."""
        return self.max_stall <= STALL_LIMIT_S


class BounceRun(st.Run):
    """``scripts/system_test.py``'s smoke run on a 3-node cluster: replication 3 for the app's topics."""

    def smoke_client_props(self, node: str) -> Path:
        path = super().smoke_client_props(node)
        # internal topics as Kafka's test creates its own: three replicas, min ISR 2 (the cluster's)
        text = path.read_text().replace("replication.factor=1\n", "replication.factor=3\n")
        path.write_text(text)
        return path

    def driver_cmd(self, props: Path, seconds: int) -> list[str]:
        """The sized driver (Kafka's SmokeTestDriver methods): 10 keys, about 50 records a second."""
        sized = ["10", str(max(seconds * 5, 100)), str(seconds)]
        classes = st.compiled_sized_driver(self.java)
        if classes is None:
            return self.java_cmd(str(st.SIZED_DRIVER), str(props), *sized)
        return [
            self.java, "-Xmx256m", "-Xms32m", "-XX:+UseSerialGC",
            "-cp", f"{classes}:{st.driver_classpath()}", st.SIZED_MAIN, str(props), *sized,
        ]  # fmt: skip


def _fail(view: ClusterView, step: Step, log: Callable[[str], None]) -> Bounce:
    cluster = view.cluster
    node = view.target(step.target)
    at = time.monotonic()
    hard = step.mode.startswith("hard")
    log(f"  {dt.datetime.now(dt.UTC):%H:%M:%S} {step.mode} of node {node} ({step.target})")
    if hard:
        cluster.kill_node(node)
    else:
        cluster.stop_node(node)
    if step.mode.endswith("bounce"):
        if hard:
            view.wait_deregistered(node, 60)
        cluster.restart_node(node)
        view.wait_healed(180)
    else:
        view.wait_deregistered(node, 60)
    return Bounce(step.mode, step.target, node, at, round(time.monotonic() - at, 1))


def run_bounces(scenario: BounceScenario, workdir: Path, log: Callable[[str], None] = print) -> BounceResult:
    """Start the cluster, the app and the driver; fail brokers as the scenario says; read the verdict."""
    workdir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    cluster = KafkaCluster(3, data_dir=workdir / "cluster")
    cluster.start()
    bounces: list[Bounce] = []
    app_exited = False
    produced_until = float("inf")
    watch: OutputWatch | None = None
    try:
        bootstrap = cluster.bootstrap_servers
        create_topics(
            KafkaClientConfig(bootstrap, BrokerProfile.REAL),
            [TopicSpec(t, st.PARTITIONS, 3) for t in st.SMOKE_TOPICS],
        )
        view = ClusterView(cluster)
        sc = st.Scenario(scenario.name, "smoke", scenario.guarantee, 1)
        run = BounceRun(sc, workdir, bootstrap, log)
        try:
            driver_props = st._write_props(
                workdir / "driver" / "streams.properties",
                {"bootstrap.servers": bootstrap, "processing.guarantee": scenario.guarantee, "acks": "all"},
            )
            node = run.proc("processor1")
            log("  starting processor1")
            run.start_client(
                node, "examples.system_tests.smoke_client", str(run.smoke_client_props(node.name))
            )
            node.wait_for("REBALANCING -> RUNNING", since=0, timeout=60 * run.slack)
            # production long enough for every failure: a bounce took 25-105 s on the busy 2-core machine
            seconds = 30 + 75 * scenario.actions
            driver = run.proc("driver")
            watch = OutputWatch(bootstrap)
            log(f"  starting the driver ({seconds} s of production)")
            driver.start(run.driver_cmd(driver_props, seconds))
            produced_until = time.monotonic() + seconds
            node.wait_for("processed", since=0, timeout=60 * run.slack)
            time.sleep(15)  # Kafka's test lets it run before the first failure
            for step in scenario.steps:
                for _ in range(step.times):
                    if not node.alive():
                        raise st.ScenarioError(f"processor1 exited ({node.exit_code()}) before a {step.mode}")
                    bounces.append(_fail(view, step, log))
                    log(f"    done in {bounces[-1].healed_s} s")
            # a failure after the driver's production measures no stall (nothing to process): say so
            late = time.monotonic() > produced_until - 10
            log("  waiting for the driver's verdict")
            driver.wait(900 * run.slack)
            app_exited = not node.alive()
            node.stop(clean=True)
            lines = driver.text().splitlines()
            verdict = next((ln for ln in reversed(lines) if ln in ("SUCCESS", "FAILURE")), "INVALID")
            notes = [
                ln for ln in lines if ln.startswith(("recordGenerated", "recordProcessed", "PROCESSED-"))
            ]
            notes += [ln.strip() for ln in lines if " fail" in ln or ln.startswith("fail:")][:3]
            accepted = verdict == "SUCCESS"
            if scenario.guarantee == "at_least_once" and verdict == "FAILURE":
                accepted = only_replayed_final_results(lines)
                if accepted:
                    notes.append("the only failure: a final result emitted again, unchanged (at-least-once)")
            if late:
                notes.append("production ended before the last failure was over (its stall unmeasured)")
            detail = "; ".join(notes)
        except st.ScenarioError as exc:
            verdict, accepted, detail = "INVALID", False, str(exc)
            app_exited = app_exited or any(
                p.name == "processor1" and p.exit_code() is not None for p in run.procs
            )
        finally:
            run.cleanup()
            if watch is not None:  # also when the run was cut short: the stalls seen until then
                ends = [b.at for b in bounces[1:]] + [min(produced_until, time.monotonic())]
                for b, end in zip(bounces, ends, strict=True):
                    b.stall_s = round(stall(watch.arrivals, b.at, end), 1)
    finally:
        if watch is not None:
            watch.close()
        cluster.stop()
    detail = (detail + "; " if detail else "") + errors_seen(workdir / "processor1")
    return BounceResult(
        scenario,
        verdict,
        accepted,
        round(time.monotonic() - started, 1),
        detail,
        workdir,
        bounces,
        app_exited,
    )


_RESULT = re.compile(r"CreateTime = (-?\d+).*, key = (.*), value = (.*)\)$")


def only_replayed_final_results(lines: list[str]) -> bool:
    """Whether the driver's FAILURE comes only from final results emitted twice, each time the same.

    Under at-least-once a task closed without a commit processes its input after the last commit again,
    so a suppressed window that closed in that span is emitted again -- with the same value and
    timestamp, the input being the same. Kafka Streams does the same (its suppression buffer logs the
    eviction only at the next commit: ``InMemoryTimeOrderedKeyValueChangeBuffer.flush``), and Kafka's
    ``streams_broker_bounce_test.py`` does not require SUCCESS at at-least-once. Any other failure --
    a wrong aggregate, a missing key, records not all delivered, a repeated result whose value or
    timestamp differs -- is not this, and stays a failure."""
    try:
        start = lines.index("Result Verification")
    except ValueError:
        return False
    body = lines[start:]
    if "ALL-RECORDS-DELIVERED" not in body:
        return False
    repeats = 0
    for i, line in enumerate(body):
        text = line.strip()
        if "fail" not in text.lower() or text == "FAILURE":
            continue
        if not (
            text.startswith("fail: key=")
            and i + 1 < len(body)
            and body[i + 1].strip() == "non-unique result:"
        ):
            return False
        results = []
        for nxt in body[i + 2 :]:
            m = _RESULT.search(nxt.strip()) if nxt.strip().startswith("ConsumerRecord(") else None
            if m is None:
                break
            results.append(m.groups())
        if len(results) < 2 or len(set(results)) != 1:
            return False
        repeats += 1
    return repeats > 0


#: what the processor's log says it went through: (label, pattern)
ERROR_PATTERNS = (
    ("tasks closed dirty", r"closing tasks .* without commit"),
    ("partitions lost (session timeout)", r"WARNING lost partitions"),
    ("transaction aborted", r"transaction aborted during"),
    ("producer replaced", r"new transactional producer replaces"),
    ("fenced", r"WARNING exactly-once: the transactional producer (?:of before the outage )?was fenced"),
    ("txn call retried", r"failed with a retriable error"),
    ("producer stuck", r"WARNING exactly-once: the transactional producer's \S+ did not return within"),
    ("stream thread failed", r"stream thread failed|shutting this instance down"),
    ("thread replaced", r"replacing it: resuming"),
)


def errors_seen(proc_dir: Path) -> str:
    """A count per kind of the recoveries the processor logged, for the report's notes."""
    text = ""
    for name in ("stdout.log", "stderr.log"):
        with contextlib.suppress(OSError):
            text += (proc_dir / name).read_text(errors="replace")
    counts = [(label, len(re.findall(pat, text, re.IGNORECASE))) for label, pat in ERROR_PATTERNS]
    seen = ", ".join(f"{label} {n}" for label, n in counts if n)
    return f"app log: {seen}" if seen else "app log: no recoveries"


# -- the report -------------------------------------------------------------------------------------------
_INTRO = """Kafka's `streams_broker_bounce_test.py` on a local 3-node Apache Kafka 4.1.1 KRaft cluster
(`edge.broker.cluster.KafkaCluster`: combined broker+controller nodes, replication 3,
`min.insync.replicas` 2, a dead broker fenced after 6 s), the edge port of SmokeTestClient
(`examples/system_tests/smoke_client.py`: one stream thread, as the edge ignores the test's
`num.stream.threads=3`; session timeout 10 s, commit interval 1 s, 2 standby replicas)
and Kafka's SmokeTestDriver (10 keys, about 50 records a second for 30 s + 75 s per failure) as judge.
Written by `scripts/broker_bounce.py` (`make system-test`). A clean or hard shutdown stops (SIGTERM) or
kills (SIGKILL) the node and leaves it down; a bounce restarts it once the cluster has fenced it (hard)
or it has stopped (clean) and waits for full ISRs before the next one; "x5" chases the leader five
times, as Kafka's test. Targets: the leader of `data`-0 (read), of a `max` partition led by another
node (write), the active KRaft controller (read from the nodes' `quorum-state`). "stall" is, per
failure, the longest wait for the next `echo` record (read committed) from the failure until the next
one. "as expected" is the driver's SUCCESS with an app that never exited; at-least-once also accepts
a FAILURE whose only cause is a final (suppressed) result emitted twice unchanged, with every record
delivered: the replay of the input after the last commit that at-least-once allows, as in Kafka
Streams (Kafka's own test does not require SUCCESS at at-least-once; see "Found by these runs"). "within
15 s" says whether every stall stayed within the session timeout + 5 s. "notes" counts the recoveries
the app logged.
"""


def write_report(path: Path, results: list[BounceResult]) -> None:
    """Replace this runner's rows for the scenarios just run in ``path``'s section; keep the rest."""
    text = path.read_text() if path.exists() else ""
    heading = re.compile(rf"^## {SECTION}\s*$", re.MULTILINE)
    m = heading.search(text)
    old_rows: dict[str, str] = {}
    if m:
        nxt = re.compile(r"^## ", re.MULTILINE).search(text, m.end())
        body_end = nxt.start() if nxt else len(text)
        body = text[m.end() : body_end]
        for line in body.splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if line.startswith("| ") and cells and cells[0] in SCENARIOS:
                old_rows[cells[0]] = line
        # prose after the table (the error-by-error explanation) is kept as it is
        tail_at = body.find("\n### ")
        tail = body[tail_at:] if tail_at >= 0 else ""
        before, after = text[: m.start()], text[body_end:]
    else:
        before, after, tail = text.rstrip("\n") + "\n\n" if text else "", "", ""
    for r in results:
        stalls = " / ".join(f"{b.stall_s}" for b in r.bounces) or "-"
        nodes = ",".join(str(b.node) for b in r.bounces) or "-"
        old_rows[r.scenario.name] = (
            f"| {r.scenario.name} | {r.scenario.describe()} | {r.verdict} | "
            f"{'yes' if r.as_expected else '**no**'} | {'**yes**' if r.app_exited else 'no'} | {nodes} | "
            f"{stalls} | {r.max_stall} | {'yes' if r.stalls_within_limit else '**no**'} | {r.seconds} | "
            f"{r.detail.replace('|', '/')} | {r.finished} |"
        )
    order = [n for n in SCENARIOS if n in old_rows]
    table = [
        "| scenario | what | driver said | as expected | app exited | nodes failed | stall per failure (s) "
        f"| max stall (s) | within {STALL_LIMIT_S:g} s | seconds | notes | run |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
        *(old_rows[n] for n in order),
    ]
    section = f"## {SECTION}\n\n{_INTRO}\n" + "\n".join(table) + "\n" + tail
    path.write_text(before + section + ("\n" + after.lstrip("\n") if after else ""))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--scenarios", default="short", help=f"a group ({', '.join(GROUPS)}) or names, comma-separated"
    )
    parser.add_argument("--report", type=Path, default=None, help="write the results into this markdown file")
    parser.add_argument("--workdir", type=Path, default=None, help="default: a new temporary directory")
    parser.add_argument("--list", action="store_true", help="list the scenarios and exit")
    args = parser.parse_args(argv)
    if args.list:
        for name, sc in SCENARIOS.items():
            print(f"{name:32} {sc.describe()}")
        return 0
    names = GROUPS.get(args.scenarios) or [n.strip() for n in args.scenarios.split(",") if n.strip()]
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        parser.error(f"unknown scenarios: {', '.join(unknown)} (see --list)")
    reason = st.drivers_unavailable_reason()
    if reason:
        print(f"skipped: {reason}", file=sys.stderr)
        return 0
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="streamhouse-broker-bounce-"))
    results = []
    for name in names:
        sc = SCENARIOS[name]
        print(f"{name}: {sc.describe()}", flush=True)
        r = run_bounces(sc, workdir / name, log=lambda s: print(s, flush=True))
        stalls = ", ".join(f"{b.stall_s}" for b in r.bounces)
        print(
            f"{name}: driver said {r.verdict}, app exited: {r.app_exited}, stalls [{stalls}] s, "
            f"{'as expected' if r.as_expected else 'NOT as expected'}, stalls within {STALL_LIMIT_S:g} s: "
            f"{r.stalls_within_limit}, in {r.seconds} s; {r.detail}",
            flush=True,
        )
        results.append(r)
        (workdir / name / "result.json").write_text(
            json.dumps(
                {
                    "verdict": r.verdict,
                    "as_expected": r.as_expected,
                    "stalls_within_limit": r.stalls_within_limit,
                    "app_exited": r.app_exited,
                    "seconds": r.seconds,
                    "detail": r.detail,
                    "bounces": [dataclasses.asdict(b) for b in r.bounces],
                },
                indent=2,
            )
        )
        if args.report:
            write_report(args.report, results)
    bad = [r for r in results if not r.as_expected]
    print(f"{len(results) - len(bad)}/{len(results)} scenarios as expected; logs in {workdir}")
    if not bad and args.workdir is None:
        shutil.rmtree(workdir, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
