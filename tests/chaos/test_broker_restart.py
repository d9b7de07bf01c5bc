"""Broker stop and restart (docs/reliability.md): the app leaves RUNNING while it owns no tasks, resumes
with exact state when the broker comes back, gives up (exit 1) when it does not, never re-creates its
topics with wrong partition counts, and logs connection errors rate-limited.

Each trial runs its own broker (the session's kind) on a fixed port so it can be stopped and started
again: Apache Kafka keeps its topics and committed offsets in its data directory across the restart;
Tansu keeps nothing (a restart is an empty broker).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient

from edge.broker import BrokerKind, kafka_unavailable_reason, local_broker, profile_for
from edge.broker.embedded import free_port
from edge.kafka import KafkaClientConfig, TopicSpec, create_topics
from tests.chaos.conftest import Scale, wait_exit
from tests.edge.runtime.harness import Instance, OutputReader, expected_counts, keyed, produce

pytestmark = [pytest.mark.slow, pytest.mark.broker, pytest.mark.timeout(600)]


class RestartableBroker:
    """A private broker of the session's kind on one port, with one data directory, for stop/start."""

    def __init__(self, kind: BrokerKind, tmp_path: Path) -> None:
        self.kind = kind
        self.port = free_port()
        self.broker = local_broker(kind, port=self.port, log_dir=tmp_path, data_dir=tmp_path / "broker-data")
        self.client = KafkaClientConfig(f"127.0.0.1:{self.port}", profile_for(kind))

    def partitions(self) -> dict[str, int]:
        topics = AdminClient(self.client.admin()).list_topics(timeout=10).topics
        return {name: len(t.partitions) for name, t in topics.items()}


@pytest.fixture
def broker(broker_kind: BrokerKind, tmp_path: Path) -> Iterator[RestartableBroker]:
    if os.environ.get("STREAMHOUSE_TEST_BOOTSTRAP_SERVERS"):
        pytest.skip("needs a local broker it can stop and start (not an external cluster)")
    if broker_kind is BrokerKind.KAFKA and (reason := kafka_unavailable_reason()):
        pytest.skip(reason)
    b = RestartableBroker(broker_kind, tmp_path)
    b.broker.start()
    try:
        yield b
    finally:
        b.broker.stop()


@pytest.fixture
def start_app(broker: RestartableBroker, tmp_path: Path) -> Iterator[Callable[..., Instance]]:
    """``start_app(app_id, src, out, **config)``: one running instance on the private broker."""
    started: list[Instance] = []

    def _start(app_id: str, src: str, out: str, *, attr: str = "counts", **config: object) -> Instance:
        inst = Instance(
            broker.client,
            app_id=app_id,
            state_dir=tmp_path / "state",
            in_topic=src,
            out_topic=out,
            attr=attr,
            config={"commit.interval.ms": 500, **{k.replace("_", "."): v for k, v in config.items()}},
            log_dir=tmp_path,
        )
        started.append(inst)
        inst.wait_running(120)
        return inst

    yield _start
    for inst in started:
        inst.stop()


def _topics(broker: RestartableBroker, unique_name: Callable[[str], str]) -> tuple[str, str]:
    src, out = unique_name("in"), unique_name("out")
    create_topics(broker.client, [TopicSpec(src, 2), TopicSpec(out, 2)])
    return src, out


def _wait_state(inst: Instance, leave: str, timeout: float) -> tuple[str, float]:
    """Wait until /health reports a state other than ``leave``; (that state, seconds it took)."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        h = inst.health()
        if h is not None and h["state"] != leave:
            return h["state"], time.monotonic() - started
        assert inst.proc.poll() is None, inst.log_tail()
        time.sleep(0.2)
    # every thread's stack (the app dumps them on SIGUSR1): where the stream thread is when it fails
    with contextlib.suppress(ProcessLookupError):
        os.kill(inst.proc.pid, signal.SIGUSR1)
    time.sleep(1.0)
    raise AssertionError(f"/health still {leave} after {timeout}s:\n{inst.log_tail(200)}")


def _wait_committed(
    broker: RestartableBroker, group: str, topic: str, records: int, timeout: float = 60
) -> None:
    """Wait until ``group`` has committed ``records`` input records of ``topic`` (both partitions)."""
    probe = Consumer(broker.client.consumer(group, **{"enable.auto.commit": False}))
    try:
        deadline = time.monotonic() + timeout
        committed = 0
        while time.monotonic() < deadline:
            tps = probe.committed([TopicPartition(topic, 0), TopicPartition(topic, 1)], timeout=10)
            committed = sum(max(tp.offset, 0) for tp in tps)
            if committed >= records:
                return
            time.sleep(0.2)
        raise AssertionError(f"{group} committed {committed} of {records} records of {topic} in {timeout}s")
    finally:
        probe.close()


def _app_lines(inst: Instance, n: int = 80) -> str:
    """The app's own log lines (librdkafka's repeated connection lines left out), for a failure message."""
    text = inst.log_path.read_text(errors="replace")
    own = [ln for ln in text.splitlines() if not ln.startswith("%") and "CONFWARN" not in ln]
    return "app log:\n" + "\n".join(own[-n:])


_MORE_ERRORS = re.compile(r"\((\d+) more errors in the last|: (\d+) more connection errors before")


def _errors_after_the_cluster_answered(log: str) -> int:
    """Connection errors the instance reported after it saw the cluster answer again (the last time)."""
    at = log.rfind("answers again; ")
    if at < 0:
        return 0
    late = 0
    for line in log[at:].splitlines()[1:]:
        if match := _MORE_ERRORS.search(line):
            late += int(match.group(1) or match.group(2))
        elif "Connection refused" in line or "brokers are down" in line:
            late += 1
    return late


def _connection_lines(inst: Instance, port: int) -> list[str]:
    text = inst.log_path.read_text(errors="replace")
    return [ln for ln in text.splitlines() if f":{port}" in ln and ("refused" in ln or "unreachable" in ln)]


@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once_v2"])
def test_app_resumes_with_exact_state_after_a_broker_restart(
    broker: RestartableBroker, start_app, unique_name, scale: Scale, record_figures, guarantee: str
) -> None:
    if broker.kind is not BrokerKind.KAFKA:
        pytest.skip("Tansu keeps topics in memory: a restarted Tansu is empty (see the other trials)")
    src, out = _topics(broker, unique_name)
    app_id = unique_name("app")
    inst = start_app(app_id, src, out, cluster_unavailable_timeout_ms=300_000, processing_guarantee=guarantee)
    eos = guarantee == "exactly_once_v2"
    reader = OutputReader(broker.client, out, unique_name("reader"), committed=eos)
    n = scale.events
    before, during, after = (
        keyed(n // 2, scale.keys),
        keyed(n // 4, scale.keys, n),
        keyed(n // 4, scale.keys, 2 * n),
    )
    produce(broker.client, src, before)
    reader.wait_for(lambda r: r.latest() == expected_counts(before), 120, "counts before the stop")
    # committed before the stop: the resumed tasks restore it from their changelogs (the app can reach
    # the output counts within one commit interval, and a stop then finds nothing committed at all)
    _wait_committed(broker, app_id, src, len(before))
    # the outputs are read again from the start by a reader that joins after the restart: a reader's
    # own group membership is not what this trial is about, and in a CI run one that lived through the
    # stop timed out its session (librdkafka's SESSTMOUT) and read nothing more for 180 s
    reader.close()
    produce(broker.client, src, during)  # being processed, and likely not committed, at the stop
    broker.broker.stop()
    stopped = time.monotonic()
    state, left_after = _wait_state(inst, "RUNNING", 120)
    assert state == "REBALANCING", inst.log_tail()
    time.sleep(5)  # longer than the session timeout: the restarted broker has dropped the member
    broker.broker.start()
    produce(broker.client, src, after)
    reader = OutputReader(broker.client, out, unique_name("reader-after"), committed=eos)
    truth = expected_counts(before, during, after)
    try:
        reader.wait_for(lambda r: all(r.latest().get(k) == c for k, c in truth.items()), 180, "counts after")
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{_app_lines(inst)}") from None
    resumed_after = time.monotonic() - stopped
    inst.wait_running(60)
    stores = {k: inst.get(f"/v1/stores/counts/keys/{k}")[1]["value"] for k in truth}
    reader.poll(1.0)
    per_key: dict[str, list[int]] = {}
    for key, value, _, _ in reader.records:
        per_key.setdefault(key, []).append(value)
    missing = sum(len(set(range(1, c + 1)) - set(per_key.get(k, []))) for k, c in truth.items())
    repeated = sum(c - 1 for vs in per_key.values() for c in Counter(vs).values() if c > 1)
    reader.close()
    counts = broker.partitions()
    lines = _connection_lines(inst, broker.port)
    log = inst.log_path.read_text(errors="replace")
    late = _errors_after_the_cluster_answered(log)
    record_figures(
        guarantee=guarantee,
        # where the stop landed: in an offset commit (abandoned; it holds the consumer until the broker
        # is back) or elsewhere (the partitions are lost while the cluster is unreachable)
        offset_commit_abandoned="offset commit abandoned" in log,
        # exactly-once: the producer of before the outage still held records of the transaction the
        # coordinator aborted on its return (the new producer replaces it; the instance must go on)
        old_producer_fenced="fenced by a newer instance" in log,
        events=len(before) + len(during) + len(after),
        left_running_after_s=round(left_after, 1),
        resumed_after_s=round(resumed_after, 1),
        state_over_truth=max((stores[k] - c for k, c in truth.items()), default=0),
        outputs_missing=missing,
        outputs_repeated=repeated,
        connection_error_lines=len(lines),
        errors_logged_after_the_cluster_answered=late,
        restored_records=int(inst.metric("streamhouse_edge_restored_records_total")),
    )
    over = {k: (stores[k], c) for k, c in truth.items() if stores[k] != c}
    assert not over, f"store != truth for {len(over)} keys, e.g. {list(over.items())[:5]}\n{_app_lines(inst)}"
    assert missing == 0, f"{missing} count values never reached the output\n{_app_lines(inst)}"
    if eos:
        assert repeated == 0, f"{repeated} outputs repeated under exactly-once"
    assert counts[f"{app_id}-counts-changelog"] == 2 and counts[f"{app_id}-instances"] == 1
    assert inst.metric("streamhouse_edge_cluster_unavailable_seconds") == 0, _app_lines(inst)
    assert len(lines) <= 20, "\n".join(lines[:40])
    # an idle client's errors are served as they happen, not as a flood of stale ones once the cluster
    # is back (the restore consumer's, at the next restore: 385-671 of them before it was polled idle)
    assert late <= 50, _app_lines(inst)


def test_app_gives_up_when_the_cluster_stays_away(
    broker: RestartableBroker, start_app, unique_name, record_figures
) -> None:
    """The broker stops while the app is busy and commits every 5 ms, so the stop lands in or next to a
    commit (flush, offset commit, checkpoint): wherever the stream thread is, the app must leave RUNNING
    and give up."""
    src, out = _topics(broker, unique_name)
    inst = start_app(unique_name("app"), src, out, cluster_unavailable_timeout_ms=8000, commit_interval_ms=5)
    # the app commits only after new input, and it can drain a fixed batch in fewer than 20 commits:
    # input keeps coming until it has committed 20 times, and one more batch is in flight at the stop
    deadline = time.monotonic() + 60
    sent = 0
    while inst.metric("streamhouse_edge_commits_total") < 20:
        assert time.monotonic() < deadline, inst.log_tail()
        sent += produce(broker.client, src, keyed(2_000, 100, sent))
    produce(broker.client, src, keyed(20_000, 100, sent))
    broker.broker.stop()
    stopped = time.monotonic()
    assert _wait_state(inst, "RUNNING", 60)[0] == "REBALANCING"
    code = wait_exit(inst, 90)
    gave_up_after = time.monotonic() - stopped
    log = inst.log_path.read_text(errors="replace")
    lines = _connection_lines(inst, broker.port)
    record_figures(
        gave_up_after_s=round(gave_up_after, 1),
        offset_commit_abandoned="offset commit abandoned" in log,
        connection_error_lines=len(lines),
    )
    assert code == 1, inst.log_tail()
    assert "error: no broker of the Kafka cluster" in log and "cluster.unavailable.timeout.ms=8000" in log
    assert "Traceback" not in log
    assert 8 <= gave_up_after < 60
    assert 1 <= len(lines) <= 12, "\n".join(lines[:40])


def test_restarted_empty_broker_is_a_clear_error_not_wrong_partition_counts(
    broker: RestartableBroker, start_app, unique_name
) -> None:
    if broker.kind is not BrokerKind.TANSU:
        pytest.skip("Apache Kafka keeps its topics across a restart (see the resume trial)")
    src, out = _topics(broker, unique_name)
    app_id = unique_name("app")
    inst = start_app(app_id, src, out)
    produce(broker.client, src, keyed(100, 10))
    broker.broker.stop()
    time.sleep(3)  # past the embedded profile's 2 s session timeout
    broker.broker.start()
    code = wait_exit(inst, 60)
    log = inst.log_path.read_text(errors="replace")
    assert code == 1, inst.log_tail()
    assert f"error: source topic(s) '{src}' of application '{app_id}' do not exist" in log
    # whatever the app's clients asked the new broker, no topic came back with its default count
    counts = broker.partitions()
    assert {t: c for t, c in counts.items() if t.startswith(app_id)} in ({}, {f"{app_id}-instances": 1})
    assert src not in counts and out not in counts


@pytest.mark.parametrize("app", ["counts", "passthrough"])
def test_sigterm_while_the_cluster_is_away_ends_the_app(
    broker: RestartableBroker, start_app, unique_name, record_figures, app: str
) -> None:
    """Records processed, their offsets not yet committed, then the broker stops and the app gets
    SIGTERM: the closing commit cannot succeed, so it must give up (the input is processed again after a
    restart, as after any failed commit) and the app exit, saying why in one line. With a store the
    changelog's commit marker cannot be delivered; a stateless app has delivered everything, and only
    the offset commit waits, for a coordinator that is gone."""
    src, out = _topics(broker, unique_name)
    inst = start_app(unique_name("app"), src, out, commit_interval_ms=600_000, attr=app)
    produce(broker.client, src, keyed(200, 10))
    reader = OutputReader(broker.client, out, unique_name("reader"), committed=False)
    reader.wait_for(lambda r: len(r.records) == 200, 60, "the outputs before the stop")
    reader.close()
    broker.broker.stop()
    time.sleep(0.5)
    stopped = time.monotonic()
    with contextlib.suppress(ProcessLookupError):
        os.kill(inst.proc.pid, signal.SIGTERM)
    code = wait_exit(inst, 90)
    exited_after = time.monotonic() - stopped
    log = inst.log_path.read_text(errors="replace")
    record_figures(app=app, exited_after_s=round(exited_after, 1))
    assert "Traceback" not in log, inst.log_tail()
    assert "final commit failed" in log and "processed again after a restart" in log, inst.log_tail()
    assert code in (0, 1), inst.log_tail()
    assert exited_after < 60, inst.log_tail()
