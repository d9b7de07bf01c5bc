"""Runtime behaviour checked in-process: validation errors, lifecycle, failures, global tables."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from click.testing import CliRunner

from edge.errors import StreamhouseError
from edge.processor.api import Processor
from edge.processor.record import Record
from edge.runtime import State, StreamsApp, StreamsConfig, StreamsConfigError
from edge.runtime.state import IllegalStateTransition, Lifecycle
from edge.runtime.statedir import StateDirLockedError
from edge.runtime.topics import CoPartitioningError, MissingSourceTopicError
from edge.serde import Serdes
from edge.state import key_value_store_builder
from edge.topology import Topology
from orchestration.cli.edge import AppLoadError, load_app_object
from tests.edge.runtime.harness import OutputReader, produce

pytestmark = [pytest.mark.broker, pytest.mark.timeout(60)]


def _config(client, app_id: str, state_dir: Path, **extra) -> dict:
    return {
        "application.id": app_id,
        "bootstrap.servers": client.bootstrap_servers,
        "broker.profile": client.profile.value,
        "state.dir": str(state_dir),
        "commit.interval.ms": 100,
        **extra,
    }


# -- config ---------------------------------------------------------------------------------------------
def test_config_errors_name_the_key():
    base = {"application.id": "app", "bootstrap.servers": "localhost:9092"}
    cfg = StreamsConfig.from_mapping({**base, "num.standby.replicas": "1", "commit.interval.ms": "250"})
    assert cfg.num_standby_replicas == 1 and cfg.effective_commit_interval_ms == 250
    assert (
        StreamsConfig.from_mapping(
            {**base, "processing.guarantee": "exactly_once_v2"}
        ).effective_commit_interval_ms
        == 100
    )
    cases = [
        ({**base, "processing.guarantee": "exactly_once"}, "processing.guarantee must be one of"),
        ({**base, "commit.interval.ms": "soon"}, "commit.interval.ms must be an integer"),
        ({**base, "num.standby.replicas": -1}, "num.standby.replicas must be an integer >= 0"),
        ({**base, "application.server": "nohost"}, "application.server: expected host:port"),
        ({**base, "application.id": "bad id!"}, "application.id 'bad id!'"),
        ({"application.id": "app"}, "bootstrap.servers is required"),
        ({**base, "default.deserialization.exception.handler": "dlq"}, "errors.dead.letter.queue.topic.name"),
    ]
    for values, message in cases:
        with pytest.raises(StreamsConfigError, match=message.replace("(", r"\(")):
            StreamsConfig.from_mapping(values)


def test_lifecycle_rejects_illegal_transitions():
    lc = Lifecycle()
    seen = []
    lc.add_listener(lambda new, old: seen.append((old.value, new.value)))
    lc.transition(State.REBALANCING)
    lc.transition(State.RUNNING)
    with pytest.raises(IllegalStateTransition):
        lc.transition(State.CREATED)
    lc.transition(State.PENDING_SHUTDOWN)
    lc.transition(State.NOT_RUNNING)
    assert seen == [
        ("CREATED", "REBALANCING"),
        ("REBALANCING", "RUNNING"),
        ("RUNNING", "PENDING_SHUTDOWN"),
        ("PENDING_SHUTDOWN", "NOT_RUNNING"),
    ]


def test_cli_reports_missing_module_or_attribute():
    with pytest.raises(AppLoadError, match="module 'no_such_module_xyz' not found"):
        load_app_object("no_such_module_xyz:app")
    with pytest.raises(AppLoadError, match="has no attribute 'nope'"):
        load_app_object("tests.edge.runtime.apps.count_app:nope")
    with pytest.raises(AppLoadError, match="expected MODULE:ATTR"):
        load_app_object("just_a_module")
    from orchestration.cli.main import cli

    result = CliRunner().invoke(cli, ["edge", "run", "--help"])
    assert result.exit_code == 0 and "--guarantee" in result.output


# -- start-time validation --------------------------------------------------------------------------------
class _Pass(Processor):
    def process(self, record: Record) -> None:
        self.context.forward(record)


def test_co_partitioning_violation_names_topics_and_counts(kafka_broker, make_topic, unique_name, tmp_path):
    left, right = make_topic("left", 2), make_topic("right", 3)
    t = Topology()
    t.add_source("src", left, right)
    t.add_processor("p", _Pass, "src")
    app = StreamsApp(t, _config(kafka_broker, unique_name("app"), tmp_path))
    with pytest.raises(CoPartitioningError) as info:
        app.start()
    msg = str(info.value)
    assert f"{left!r} has 2" in msg and f"{right!r} has 3" in msg
    assert app.state is State.CREATED


def test_missing_source_topic_is_a_clear_error(kafka_broker, unique_name, tmp_path):
    t = Topology()
    t.add_source("src", "does-not-exist-topic")
    t.add_processor("p", _Pass, "src")
    with pytest.raises(MissingSourceTopicError, match="'does-not-exist-topic'"):
        StreamsApp(t, _config(kafka_broker, unique_name("app"), tmp_path)).start()


def test_state_dir_shared_by_two_instances_is_refused(kafka_broker, make_topic, unique_name, tmp_path):
    src = make_topic("in", 1)
    t = Topology()
    t.add_source("src", src)
    t.add_processor("p", _Pass, "src")
    cfg = _config(kafka_broker, unique_name("app"), tmp_path)
    first = StreamsApp(t, cfg)
    first.start()
    try:
        with pytest.raises(StateDirLockedError, match="in use by another instance"):
            StreamsApp(t, cfg).start()
    finally:
        first.close(20)
    assert first.state is State.NOT_RUNNING


# -- failures -------------------------------------------------------------------------------------------
class _Exploding(Processor):
    def process(self, record: Record) -> None:
        if record.value == "boom":
            raise ValueError("boom")
        self.context.forward(record)


def test_processing_error_goes_to_uncaught_handler_and_error_state(
    kafka_broker, make_topic, unique_name, tmp_path
):
    src, out = make_topic("in", 1), make_topic("out", 1)
    t = Topology()
    t.add_source("src", src, key_serde=Serdes.string(), value_serde=Serdes.string())
    t.add_processor("p", _Exploding, "src")
    t.add_sink("sink", out, "p", key_serde=Serdes.string(), value_serde=Serdes.string())
    app = StreamsApp(t, _config(kafka_broker, unique_name("app"), tmp_path))
    transitions: list[tuple[str, str]] = []
    handled: list[BaseException] = []
    app.add_state_listener(lambda new, old: transitions.append((old.value, new.value)))
    app.set_uncaught_exception_handler(lambda exc: handled.append(exc) or "shutdown_client")
    app.start()
    assert app.wait_until_running(30)
    produce(kafka_broker, src, [("a", b"ok"), ("b", b"boom")])
    assert app.wait(30) is State.ERROR
    assert len(handled) == 1 and "processing error" in str(handled[0]) and f"{src!r}" in str(handled[0])
    assert transitions[-2:] == [("RUNNING", "PENDING_ERROR"), ("PENDING_ERROR", "ERROR")]


# -- global tables ---------------------------------------------------------------------------------------
class _GlobalLoader(Processor):
    def init(self, context) -> None:  # type: ignore[no-untyped-def]
        super().init(context)
        self.store = context.get_state_store("users")

    def process(self, record: Record) -> None:
        self.store.put(record.key, record.value)


class _Enrich(Processor):
    def init(self, context) -> None:  # type: ignore[no-untyped-def]
        super().init(context)
        self.users = context.get_state_store("users")

    def process(self, record: Record) -> None:
        user = self.users.get(record.value["user"])
        self.context.forward(record.with_value({**record.value, "name": user and user["name"]}))


def test_global_table_is_loaded_before_processing_and_kept_updated(
    kafka_broker, make_topic, unique_name, tmp_path
):
    users, orders, out = make_topic("users", 2), make_topic("orders", 2), make_topic("out", 1)
    produce(kafka_broker, users, [(f"u{i}", {"name": f"user-{i}"}) for i in range(200)])
    t = Topology()
    t.add_global_store(
        key_value_store_builder("users", Serdes.string(), Serdes.json()),
        "users-src",
        users,
        "users-loader",
        _GlobalLoader,
        key_serde=Serdes.string(),
        value_serde=Serdes.json(),
    )
    t.add_source("orders-src", orders, key_serde=Serdes.string(), value_serde=Serdes.json())
    t.add_processor("enrich", _Enrich, "orders-src")
    t.add_sink("sink", out, "enrich", key_serde=Serdes.string(), value_serde=Serdes.json())
    app = StreamsApp(t, _config(kafka_broker, unique_name("app"), tmp_path))
    app.start()
    try:
        assert app.wait_until_running(30)
        produce(kafka_broker, orders, [(f"o{i}", {"user": f"u{i}"}) for i in range(0, 200, 20)])
        reader = OutputReader(kafka_broker, out, unique_name("reader"))
        reader.wait_for(lambda r: len(r.records) >= 10, timeout=30)
        names = {json.loads(v)["user"]: json.loads(v)["name"] for _, v, _, _ in reader.records}
        assert names == {f"u{i}": f"user-{i}" for i in range(0, 200, 20)}
        produce(kafka_broker, users, [("u0", {"name": "renamed"})])
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with urllib.request.urlopen(f"http://{app.advertised_server}/v1/stores/users/keys/u0") as resp:
                if json.loads(resp.read())["value"] == {"name": "renamed"}:
                    break
            time.sleep(0.2)
        else:
            raise AssertionError("global store not updated")
        produce(kafka_broker, orders, [("o-late", {"user": "u0"})])
        reader.wait_for(lambda r: len(r.records) >= 11, timeout=30)
        assert json.loads(reader.records[-1][1])["name"] == "renamed"
        reader.close()
    finally:
        app.close(20)
    assert app.state is State.NOT_RUNNING


def test_start_twice_is_an_error(kafka_broker, make_topic, unique_name, tmp_path):
    src = make_topic("in", 1)
    t = Topology()
    t.add_source("src", src)
    t.add_processor("p", _Pass, "src")
    app = StreamsApp(t, _config(kafka_broker, unique_name("app"), tmp_path))
    app.start()
    try:
        with pytest.raises(StreamhouseError, match="start\\(\\) called in state"):
            app.start()
    finally:
        app.close(20)


# -- DSL, restore visibility, whole-application shutdown --------------------------------------------------
def test_dsl_word_count_with_repartition_topic(kafka_broker, make_topic, unique_name, tmp_path, monkeypatch):
    lines, out = make_topic("lines", 2), make_topic("wc", 2)
    monkeypatch.setenv("EDGE_IN", lines)
    monkeypatch.setenv("EDGE_OUT", out)
    from tests.edge.runtime.apps.count_app import word_count

    app_id = unique_name("app")
    app = StreamsApp(word_count, _config(kafka_broker, app_id, tmp_path))
    app.start()
    try:
        assert app.wait_until_running(30)
        assert sorted(app.registry.tasks) == [(0, 0), (0, 1), (1, 0), (1, 1)]
        produce(kafka_broker, lines, [(f"l{i}", b"the quick fox the end") for i in range(50)])
        reader = OutputReader(kafka_broker, out, unique_name("reader"))
        reader.wait_for(lambda r: r.latest().get("the") == 100 and r.latest().get("end") == 50, timeout=30)
        with urllib.request.urlopen(f"http://{app.advertised_server}/v1/stores/word-counts/keys/the") as resp:
            body = json.loads(resp.read())
        assert body["value"] == 100 and isinstance(body["timestamp"], int)
        reader.close()
    finally:
        app.close(20)


@pytest.mark.slow
def test_queries_answer_503_while_restoring(kafka_broker, make_topic, unique_name, tmp_path, monkeypatch):
    from benchmarks.edge_runtime_common import fill_changelog

    src, out = make_topic("in", 2), make_topic("out", 2)
    monkeypatch.setenv("EDGE_IN", src)
    monkeypatch.setenv("EDGE_OUT", out)
    from tests.edge.runtime.apps.count_app import counts

    app_id = unique_name("app")
    first = StreamsApp(counts, _config(kafka_broker, app_id, tmp_path / "a"))
    first.start()
    assert first.wait_until_running(30)
    first.close(20)
    fill_changelog(kafka_broker, f"{app_id}-counts-changelog", 2, 150_000)
    app = StreamsApp(counts, _config(kafka_broker, app_id, tmp_path / "b"))
    app.start()
    statuses: list[int] = []
    restoring_seen = False
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(
                    f"http://{app.advertised_server}/v1/stores/counts/keys/key-00000001"
                ) as r:
                    statuses.append(r.status)
                    break
            except urllib.error.HTTPError as exc:
                statuses.append(exc.code)
                if exc.code == 503:
                    assert exc.headers["Retry-After"] == "1"
            with urllib.request.urlopen(f"http://{app.advertised_server}/metrics") as r:
                restoring_seen |= "streamhouse_edge_restoring{" in (text := r.read().decode()) and any(
                    line.startswith("streamhouse_edge_restoring{") and line.endswith(" 1")
                    for line in text.splitlines()
                )
            time.sleep(0.05)
        assert 503 in statuses and statuses[-1] == 200, statuses
        assert restoring_seen
        assert app.reader.total_restored == 300_000
    finally:
        app.close(20)


@pytest.mark.slow
def test_shutdown_application_stops_every_instance(kafka_broker, make_topic, unique_name, tmp_path):
    src, out = make_topic("in", 1), make_topic("out", 1)
    t = Topology()
    t.add_source("src", src, key_serde=Serdes.string(), value_serde=Serdes.string())
    t.add_processor("p", _Exploding, "src")
    t.add_sink("sink", out, "p", key_serde=Serdes.string(), value_serde=Serdes.string())
    app_id = unique_name("app")
    apps = [
        StreamsApp(t, _config(kafka_broker, app_id, tmp_path / name, **{"metadata.interval.ms": 300}))
        for name in ("a", "b")
    ]
    for app in apps:
        app.set_uncaught_exception_handler(lambda exc: "shutdown_application")
        app.start()
    try:
        for app in apps:
            assert app.wait_until_running(30)
        time.sleep(1.0)  # both see each other's metadata
        produce(kafka_broker, src, [("k", b"boom")])
        states = sorted(app.wait(30).value for app in apps)
        assert states == ["ERROR", "NOT_RUNNING"], states
    finally:
        for app in apps:
            app.close(20)


@pytest.mark.slow
def test_corrupt_checkpoint_and_store_are_rebuilt_from_changelog(
    kafka_broker, make_topic, unique_name, tmp_path, monkeypatch
):
    src, out = make_topic("in", 2), make_topic("out", 2)
    monkeypatch.setenv("EDGE_IN", src)
    monkeypatch.setenv("EDGE_OUT", out)
    from tests.edge.runtime.apps.count_app import counts

    app_id = unique_name("app")
    cfg = _config(kafka_broker, app_id, tmp_path)
    app = StreamsApp(counts, cfg)
    app.start()
    assert app.wait_until_running(30)
    produce(kafka_broker, src, [(f"k{i % 7}", i) for i in range(140)])
    reader = OutputReader(kafka_broker, out, unique_name("reader"))
    reader.wait_for(lambda r: len(r.records) >= 140)
    reader.close()
    app.close(20)
    task_dirs = tmp_path / app_id
    (task_dirs / "0_0" / ".checkpoint").write_text("garbage\n")
    (task_dirs / "0_1" / "rocksdb" / "counts" / "CURRENT").write_text("garbage\n")
    app = StreamsApp(counts, cfg)
    app.start()
    try:
        assert app.wait_until_running(30)
        # both tasks rebuilt from offset 0: with changelog.collapse (the default) the changelogs hold
        # one record per key per commit that touched it, not one per input
        assert 0 < app.reader.total_restored <= 140
        for key in range(7):
            with urllib.request.urlopen(
                f"http://{app.advertised_server}/v1/stores/counts/keys/k{key}"
            ) as resp:
                assert json.loads(resp.read())["value"] == 20
    finally:
        app.close(20)


@pytest.mark.slow
def test_replace_thread_under_eos_aborts_and_resumes_from_the_checkpoint(
    kafka_broker, make_topic, unique_name, tmp_path, monkeypatch
):
    from tests.edge.runtime.test_eos import assert_exactly_once

    src, out = make_topic("in", 2), make_topic("out", 2)
    monkeypatch.setenv("EDGE_IN", src)
    monkeypatch.setenv("EDGE_OUT", out)
    from tests.edge.runtime.apps.count_app import counts

    app = StreamsApp(
        counts,
        _config(kafka_broker, unique_name("app"), tmp_path, **{"processing.guarantee": "exactly_once_v2"}),
    )
    app.set_uncaught_exception_handler(lambda exc: "replace_thread")
    app.start()
    try:
        assert app.wait_until_running(30)
        first = [(f"k{i % 5}", i) for i in range(100)]
        produce(kafka_broker, src, first)
        reader = OutputReader(kafka_broker, out, unique_name("reader"))
        reader.wait_for(lambda r: len(r.records) >= 100)
        time.sleep(0.5)  # committed; the failing record starts a fresh transaction
        produce(kafka_broker, src, [("k0", {"fail_once": True})])
        second = [(f"k{i % 5}", i) for i in range(50)]
        produce(kafka_broker, src, second)
        reader.wait_for(lambda r: len(r.records) >= 151, timeout=30)
        reader.poll(0.5)
        want = {f"k{i}": 30 for i in range(5)}
        want["k0"] += 1
        assert_exactly_once(reader, want)
        assert app.stats.replaced_threads == 1
        # the stores held committed writes only (deferred to the commit): each resumed from its
        # checkpoint, not wiped and restored from offset 0 (Kafka Streams' way under exactly-once)
        starts = {(pr.task_id, pr.store): pr.start_offset for pr in app.stats.restores}
        assert starts and all(start > 0 for start in starts.values()), starts
        assert app.state is State.RUNNING
        reader.close()
    finally:
        app.close(20)


@pytest.mark.slow
def test_eos_abort_drops_collapsed_changelog_records_of_the_aborted_transaction(
    kafka_broker, make_topic, unique_name, tmp_path, monkeypatch
):
    """Writes before the failing record sit in the store's collapsed changelog buffer when the
    transaction aborts: the dirty close must drop them (no produce outside a transaction) and the
    rebuilt state must not count them twice."""
    from tests.edge.runtime.test_eos import assert_exactly_once

    src, out = make_topic("in", 1), make_topic("out", 1)
    monkeypatch.setenv("EDGE_IN", src)
    monkeypatch.setenv("EDGE_OUT", out)
    from tests.edge.runtime.apps.count_app import counts

    app = StreamsApp(
        counts,
        _config(
            kafka_broker,
            unique_name("app"),
            tmp_path,
            **{"processing.guarantee": "exactly_once_v2", "commit.interval.ms": 1000},
        ),
    )
    app.set_uncaught_exception_handler(lambda exc: "replace_thread")
    app.start()
    try:
        assert app.wait_until_running(30)
        produce(kafka_broker, src, [(f"k{i % 5}", i) for i in range(100)])
        reader = OutputReader(kafka_broker, out, unique_name("reader"))
        reader.wait_for(lambda r: len(r.records) >= 100, timeout=30)
        # one batch, one transaction: 20 counted (collapsed changelog pending), then the failure
        batch = [(f"k{i % 5}", i) for i in range(20)] + [("k3", {"fail_once": True})]
        produce(kafka_broker, src, batch + [(f"k{i % 5}", i) for i in range(20)])
        reader.wait_for(lambda r: len(r.records) >= 141, timeout=30)
        reader.poll(1.0)
        want = {f"k{i}": 28 for i in range(5)}
        want["k3"] += 1
        assert_exactly_once(reader, want)
        assert app.stats.replaced_threads == 1
        assert app.state is State.RUNNING
        reader.close()
    finally:
        app.close(20)


@pytest.mark.slow
def test_three_instances_keep_exactly_one_standby_per_task(
    kafka_broker, make_topic, unique_name, tmp_path, monkeypatch
):
    src, out = make_topic("in", 6), make_topic("out", 6)
    monkeypatch.setenv("EDGE_IN", src)
    monkeypatch.setenv("EDGE_OUT", out)
    from tests.edge.runtime.apps.count_app import counts

    app_id = unique_name("app")
    # eager (range assignor): where a failed owner's task goes is predictable, and its standby is there
    # (the cooperative protocol's placement is tested in test_cooperative_standbys_are_spread)
    extra = {"num.standby.replicas": 1, "metadata.interval.ms": 300, "upgrade.from": "2.3"}
    apps = [StreamsApp(counts, _config(kafka_broker, app_id, tmp_path / n, **extra)) for n in "abc"]
    for app in apps:
        app.start()
    try:
        deadline = time.monotonic() + 60
        while True:
            try:  # read from this thread while the stream threads work: retry if a dict changes under us
                active = [set(a.registry.tasks) for a in apps]
                standby = [set(a.standby.tasks) if a.standby else set() for a in apps]
            except RuntimeError:
                continue
            all_tasks = {(0, p) for p in range(6)}
            settled = (
                all(a.state is State.RUNNING for a in apps)
                and sorted(t for s in active for t in s) == sorted(all_tasks)
                and sorted(t for s in standby for t in s) == sorted(all_tasks)
                and all(not (act & sb) for act, sb in zip(active, standby, strict=True))
            )
            if settled:
                break
            assert time.monotonic() < deadline, f"active {active}, standby {standby}"
            time.sleep(0.2)
        assert all(len(s) == 2 for s in active)
        # each standby sits where the range assignor moves its task if the task's owner fails
        from edge.runtime.standby import range_owner

        by_member = sorted(apps, key=lambda a: a._client_id)

        def misplaced() -> list[tuple[int, str, str]]:
            wrong = []
            for owner in apps:
                others = [a for a in by_member if a is not owner]
                for _st, p in list(owner.registry.tasks):
                    heir = range_owner([a.instance_id for a in others], 6, p)
                    holder = next(a for a in apps if a.instance_id == heir)
                    if (0, p) not in holder.standby.tasks:
                        wrong.append((p, owner.instance_id, heir))
            return wrong

        deadline = time.monotonic() + 10
        while misplaced():
            assert time.monotonic() < deadline, misplaced()
            time.sleep(0.2)
        produce(kafka_broker, src, [(f"k{i}", i) for i in range(600)])
        reader = OutputReader(kafka_broker, out, unique_name("reader"))
        reader.wait_for(lambda r: len(r.records) >= 600, timeout=30)
        reader.close()
        time.sleep(1.0)  # standbys tail the changelogs
        # the last member in the range order: its failure also moves tasks between the survivors
        victim = by_member[-1]
        survivors = [a for a in apps if a is not victim]
        before = [a.reader.total_restored for a in survivors]
        victim.close(20)
        deadline = time.monotonic() + 60
        while True:
            try:
                owned = [set(a.registry.tasks) for a in survivors]
            except RuntimeError:
                continue
            if all(a.state is State.RUNNING for a in survivors) and set().union(*owned) == all_tasks:
                break
            assert time.monotonic() < deadline, owned
            time.sleep(0.2)
        restored = sum(a.reader.total_restored for a in survivors) - sum(before)
        assert restored < 20, restored  # taken over from warm standbys
    finally:
        for app in apps:
            app.close(20)


class _Ticker(Processor):
    def init(self, context) -> None:  # type: ignore[no-untyped-def]
        super().init(context)
        from edge.processor.api import PunctuationType

        self.seen = 0
        context.schedule(200, PunctuationType.WALL_CLOCK_TIME, self._tick)

    def _tick(self, timestamp: int) -> None:
        self.context.forward(Record(f"tick-{self.context.task_id}", str(self.seen), timestamp))

    def process(self, record: Record) -> None:
        self.seen += 1


def test_wall_clock_punctuation_output_is_committed_under_eos(
    kafka_broker, make_topic, unique_name, tmp_path
):
    src, out = make_topic("in", 1), make_topic("out", 1)
    t = Topology()
    t.add_source("src", src, key_serde=Serdes.string(), value_serde=Serdes.string())
    t.add_processor("tick", _Ticker, "src")
    t.add_sink("sink", out, "tick", key_serde=Serdes.string(), value_serde=Serdes.string())
    app = StreamsApp(
        t, _config(kafka_broker, unique_name("app"), tmp_path, **{"processing.guarantee": "exactly_once_v2"})
    )
    app.start()
    try:
        assert app.wait_until_running(30)
        produce(kafka_broker, src, [("k", b"x")] * 3)
        reader = OutputReader(kafka_broker, out, unique_name("reader"))  # read_committed
        reader.wait_for(lambda r: any(v == b"3" for _, v, _, _ in r.records), timeout=20, what="ticks")
        assert {k for k, *_ in reader.records} == {"tick-0_0"}
        reader.close()
    finally:
        app.close(20)


def test_repartition_topic_partitions_follow_input_or_request(kafka_broker, make_topic, unique_name):
    from edge.dsl import Consumed, Repartitioned, StreamsBuilder
    from edge.runtime.topics import ensure_internal_topics, plan_topics

    src = make_topic("in", 2)
    sb = StreamsBuilder()
    stream = sb.stream(src, Consumed.with_(Serdes.string(), Serdes.string()))
    stream.repartition(Repartitioned.as_("wide").with_num_partitions(3)).group_by_key().count(
        materialized="c1"
    )
    stream.group_by(lambda k, v: v).count(materialized="c2")
    app_id = unique_name("app")
    plan = plan_topics(sb.build(), app_id, kafka_broker)
    ensure_internal_topics(plan, kafka_broker)
    by_store = {store: st for st in plan.subtopologies.values() for store in st.stores}
    assert by_store["c1"].partitions == 3  # requested
    assert by_store["c2"].partitions == 2  # inherited from the input topic
    assert plan.subtopologies[0].partitions == 2
    changelogs = {spec.name: spec for spec in plan.internal}
    assert changelogs[f"{app_id}-c1-changelog"].partitions == 3
    assert changelogs[f"{app_id}-c1-changelog"].config["cleanup.policy"] == "compact"


def test_query_port_in_use_is_a_clear_error(kafka_broker, make_topic, unique_name, tmp_path):
    import socket

    src = make_topic("in", 1)
    t = Topology()
    t.add_source("src", src)
    t.add_processor("p", _Pass, "src")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        cfg = _config(
            kafka_broker, unique_name("app"), tmp_path, **{"application.server": f"127.0.0.1:{port}"}
        )
        with pytest.raises(StreamsConfigError, match=f"cannot serve queries on 127.0.0.1:{port}"):
            StreamsApp(t, cfg).start()
    # the failed start released the state directory lock
    app = StreamsApp(t, _config(kafka_broker, cfg["application.id"], tmp_path))
    app.start()
    app.close(20)
    assert app.state is State.NOT_RUNNING


def test_missing_output_topic_is_a_clear_error(kafka_broker, make_topic, unique_name, tmp_path):
    src = make_topic("in", 1)
    t = Topology()
    t.add_source("src", src)
    t.add_processor("p", _Pass, "src")
    t.add_sink("sink", "no-such-output-topic", "p")
    with pytest.raises(MissingSourceTopicError, match="output topic\\(s\\) 'no-such-output-topic'"):
        StreamsApp(t, _config(kafka_broker, unique_name("app"), tmp_path)).start()


@pytest.mark.slow
def test_checkpoint_beyond_changelog_end_rebuilds_the_store(
    kafka_broker, make_topic, unique_name, tmp_path, monkeypatch
):
    """E.g. the in-memory embedded broker was restarted: the local state claims more than the changelog."""
    from edge.state.checkpoint import write_checkpoint

    src, out = make_topic("in", 1), make_topic("out", 1)
    monkeypatch.setenv("EDGE_IN", src)
    monkeypatch.setenv("EDGE_OUT", out)
    from tests.edge.runtime.apps.count_app import counts

    app_id = unique_name("app")
    cfg = _config(kafka_broker, app_id, tmp_path)
    app = StreamsApp(counts, cfg)
    app.start()
    assert app.wait_until_running(30)
    produce(kafka_broker, src, [(f"k{i % 5}", i) for i in range(50)])
    reader = OutputReader(kafka_broker, out, unique_name("reader"))
    reader.wait_for(lambda r: len(r.records) >= 50)
    reader.close()
    app.close(20)
    write_checkpoint(tmp_path / app_id / "0_0" / ".checkpoint", {(f"{app_id}-counts-changelog", 0): 10_000})
    app = StreamsApp(counts, cfg)
    app.start()
    try:
        assert app.wait_until_running(60)
        assert 0 < app.reader.total_restored <= 50  # the whole (collapsed) changelog
        with urllib.request.urlopen(f"http://{app.advertised_server}/v1/stores/counts/keys/k1") as resp:
            assert json.loads(resp.read())["value"] == 10
    finally:
        app.close(20)


@pytest.mark.slow
def test_global_checkpoint_beyond_topic_end_reloads_global_stores(
    kafka_broker, make_topic, unique_name, tmp_path
):
    from edge.state.checkpoint import write_checkpoint

    users, orders, out = make_topic("users", 1), make_topic("orders", 1), make_topic("out", 1)
    produce(kafka_broker, users, [(f"u{i}", {"name": f"user-{i}"}) for i in range(30)])

    def topology() -> Topology:
        t = Topology()
        t.add_global_store(
            key_value_store_builder("users", Serdes.string(), Serdes.json()),
            "users-src",
            users,
            "users-loader",
            _GlobalLoader,
            key_serde=Serdes.string(),
            value_serde=Serdes.json(),
        )
        t.add_source("orders-src", orders, key_serde=Serdes.string(), value_serde=Serdes.json())
        t.add_processor("enrich", _Enrich, "orders-src")
        t.add_sink("sink", out, "enrich", key_serde=Serdes.string(), value_serde=Serdes.json())
        return t

    app_id = unique_name("app")
    write_checkpoint(tmp_path / app_id / "global" / ".checkpoint", {(users, 0): 5_000})
    app = StreamsApp(topology, _config(kafka_broker, app_id, tmp_path))
    app.start()
    try:
        assert app.wait_until_running(60)
        with urllib.request.urlopen(f"http://{app.advertised_server}/v1/stores/users/keys/u29") as resp:
            assert json.loads(resp.read())["value"] == {"name": "user-29"}
    finally:
        app.close(20)
