"""End-to-end runtime tests: real instances (processes) against the session's broker."""

from __future__ import annotations

import shutil
import time

import pytest

from tests.edge.runtime.harness import OutputReader, expected_counts, keyed, produce, wait_assignment

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.timeout(120)]


def test_count_at_least_once_exact_and_sigterm(kafka_broker, make_topic, unique_name, spawn):
    src, out = make_topic("in", 4), make_topic("out", 4)
    app = unique_name("app")
    a = spawn(app, src, out)
    a.wait_running()
    batch = keyed(3000, 25)
    produce(kafka_broker, src, batch)
    reader = OutputReader(kafka_broker, out, unique_name("reader"))
    reader.wait_for(lambda r: len(r.records) >= len(batch))
    reader.poll(0.5)
    assert len(reader.records) == len(batch)  # one output per input, no duplicates
    assert reader.latest() == expected_counts(batch)
    assert a.metric("streamhouse_edge_records_processed_total") == len(batch)
    # consumer lag per input partition (from the consumer's statistics, refreshed every 2 s)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        lag = [
            line
            for line in a.get("/metrics")[1].splitlines()
            if line.startswith("streamhouse_edge_consumer_lag{")
        ]
        if len(lag) == 4 and all(line.endswith(" 0") for line in lag):
            break
        time.sleep(0.3)
    else:
        raise AssertionError(f"no per-partition lag of 0: {lag}")
    started = time.monotonic()
    assert a.terminate(timeout=10) == 0
    assert time.monotonic() - started < 10
    assert "PENDING_SHUTDOWN -> NOT_RUNNING" in a.log_tail(200)
    reader.close()


def test_restart_with_state_dir_deleted_restores_from_changelog(
    kafka_broker, make_topic, unique_name, spawn, tmp_path
):
    src, out = make_topic("in", 2), make_topic("out", 2)
    app = unique_name("app")
    state = tmp_path / "state"
    a = spawn(app, src, out, name="a", state_dir=state)
    a.wait_running()
    first = keyed(1000, 10)
    produce(kafka_broker, src, first)
    reader = OutputReader(kafka_broker, out, unique_name("reader"))
    reader.wait_for(lambda r: len(r.records) >= len(first))
    assert a.terminate() == 0
    shutil.rmtree(state)
    b = spawn(app, src, out, name="b", state_dir=state)
    b.wait_running()
    # restored from the changelog: queries see the old counts before any new input
    for key, n in expected_counts(first).items():
        status, body = b.get(f"/v1/stores/counts/keys/{key}")
        assert status == 200 and body["value"] == n, body
    assert b.metric("streamhouse_edge_restored_records_total") >= 10
    second = keyed(500, 10, start=1000)
    produce(kafka_broker, src, second)
    want = expected_counts(first, second)
    reader.wait_for(lambda r: r.latest() == want, what="counts after restore")
    reader.close()


def test_two_instances_split_work_and_answer_queries(kafka_broker, make_topic, unique_name, spawn):
    src, out = make_topic("in", 4), make_topic("out", 4)
    app = unique_name("app")
    a = spawn(app, src, out, name="a")
    b = spawn(app, src, out, name="b")
    owned = wait_assignment([a, b], 4)
    assert all(len(ps) == 2 for ps in owned.values()), owned
    batch = keyed(4000, 40)
    produce(kafka_broker, src, batch)
    reader = OutputReader(kafka_broker, out, unique_name("reader"))
    reader.wait_for(lambda r: len(r.records) >= len(batch))
    reader.poll(0.3)
    want = expected_counts(batch)
    assert len(reader.records) == len(batch)
    assert reader.latest() == want
    pa = a.metric("streamhouse_edge_records_processed_total")
    pb = b.metric("streamhouse_edge_records_processed_total")
    assert pa > 0 and pb > 0 and pa + pb == len(batch)
    # interactive queries: either instance answers for any key (forwarding to the owner)
    for inst in (a, b):
        for key, n in want.items():
            status, body = inst.get(f"/v1/stores/counts/keys/{key}")
            assert status == 200, body
            assert body["value"] == n
        status, body = inst.get("/v1/stores/counts/all")
        assert status == 200 and {e["key"]: e["value"] for e in body["entries"]} == want
        assert sorted(body["instances"]) == sorted(i["instance"] for i in inst.metadata()["instances"])
        status, body = inst.get("/v1/stores/counts/range?from=k1&to=k19")
        assert status == 200
        assert {e["key"] for e in body["entries"]} == {k for k in want if "k1" <= k <= "k19"}
    status, body = a.get("/v1/stores/counts/keys/nope")
    assert status == 404
    status, body = a.get("/v1/stores/nostore/keys/k1")
    assert status == 404 and body["known_stores"] == ["counts"]
    status, body = a.get("/v1/stores/counts/all?bogus=1")
    assert status == 400
    status, body = a.get("/v1/stores/counts/all?limit=x")
    assert status == 400
    md = a.metadata()
    assert len(md["instances"]) == 2 and md["stores"]["counts"]["partitions"] == 4
    reader.close()


@pytest.mark.parametrize("standbys", [0, 1])
def test_kill9_failover(kafka_broker, make_topic, unique_name, spawn, standbys):
    src, out = make_topic("in", 4), make_topic("out", 4)
    app = unique_name("app")
    a = spawn(app, src, out, name="a", num_standby_replicas=standbys)
    b = spawn(app, src, out, name="b", num_standby_replicas=standbys)
    owned = wait_assignment([a, b], 4)
    first = keyed(2000, 20)
    produce(kafka_broker, src, first)
    reader = OutputReader(kafka_broker, out, unique_name("reader"))
    reader.wait_for(lambda r: len(r.records) >= len(first))
    time.sleep(0.8)  # > commit.interval.ms: the crash comes after a commit (at-least-once stays exact)
    if standbys:  # the survivor keeps warm copies of the victim's two tasks
        deadline = time.monotonic() + 15
        while not (
            b.metric("streamhouse_edge_standby_tasks") == 2
            and b.metric("streamhouse_edge_standby_records_applied_total") > 0
        ):
            assert time.monotonic() < deadline, b.log_tail()
            time.sleep(0.2)
    a.kill9()
    second = keyed(2000, 20, start=2000)
    produce(kafka_broker, src, second)
    want = expected_counts(first, second)
    reader.wait_for(lambda r: r.latest() == want, timeout=60, what="final counts after failover")
    assert b.metric("streamhouse_edge_active_tasks") == 4
    for key, n in want.items():
        status, body = b.get(f"/v1/stores/counts/keys/{key}")
        assert status == 200 and body["value"] == n
    restored = b.metric("streamhouse_edge_restored_records_total")
    if standbys:
        # the standby copies were warm: taking over restores (almost) nothing
        assert restored < 200, restored
    else:
        assert restored >= len(owned[a.server]) and restored > 0
    reader.close()


def test_poison_record_goes_to_dlq_and_app_keeps_running(kafka_broker, make_topic, unique_name, spawn):
    src, out = make_topic("in", 2), make_topic("out", 2)
    dlq = unique_name("dlq")
    app = unique_name("app")
    a = spawn(
        app,
        src,
        out,
        default_deserialization_exception_handler="dlq",
        errors_dead_letter_queue_topic_name=dlq,
    )
    a.wait_running()
    good1 = keyed(100, 5)
    produce(kafka_broker, src, good1)
    produce(kafka_broker, src, [("k1", b"\xffnot json")])
    good2 = keyed(100, 5, start=100)
    produce(kafka_broker, src, good2)
    reader = OutputReader(kafka_broker, out, unique_name("reader"))
    want = expected_counts(good1, good2)
    reader.wait_for(lambda r: r.latest() == want)
    dead = OutputReader(kafka_broker, dlq, unique_name("dlq-reader"))
    dead.wait_for(lambda r: len(r.records) >= 1, timeout=20)
    assert dead.records[0][0] == "k1" and dead.records[0][1] == b"\xffnot json"
    headers = dict(dead.headers[0])
    assert headers["__streams.errors.topic"].decode() == src
    assert a.health()["state"] == "RUNNING"
    assert a.metric("streamhouse_edge_dlq_records_total") == 1
    assert a.metric("streamhouse_edge_errors_total") == 1
    reader.close()
    dead.close()


def test_kill9_under_load_loses_nothing_at_least_once(kafka_broker, make_topic, unique_name, spawn):
    """A crash while records are in flight: at-least-once may count some twice, but never loses one."""
    src, out = make_topic("in", 4), make_topic("out", 4)
    app = unique_name("app")
    a = spawn(app, src, out, name="a", num_standby_replicas=1)
    b = spawn(app, src, out, name="b", num_standby_replicas=1)
    wait_assignment([a, b], 4)
    batches = []
    for i in range(8):
        batch = keyed(500, 16, start=i * 500)
        batches.append(batch)
        produce(kafka_broker, src, batch)
        if i == 3:
            a.kill9()
    want = expected_counts(*batches)
    reader = OutputReader(kafka_broker, out, unique_name("reader"))
    reader.wait_for(
        lambda r: all(r.maxima().get(k, 0) >= n for k, n in want.items()),
        timeout=60,
        what="every record counted",
    )
    for key, n in want.items():
        status, body = b.get(f"/v1/stores/counts/keys/{key}")
        assert status == 200 and body["value"] >= n
    reader.close()
