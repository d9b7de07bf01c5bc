"""The peers in ``make bench`` (Kafka Streams, Bytewax, Pathway, the edge with its record cache): each
peer module gives a well-formed result object or a not-available reason. No figure is asserted; the slow
test runs the whole peers hook at a tiny size on the shared broker and checks every result is well
formed and, when measured, verified.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest

from benchmarks import peer_venvs
from benchmarks.common import REQUIRED_FIELDS, prepare_input, prepare_table
from benchmarks.systems import bytewax_peer, kafka_streams, pathway_peer, peers, streamhouse_coalesced

STATUSES = {"ok", "not_available", "failed"}


def _well_formed(r: dict) -> None:
    assert all(f in r for f in REQUIRED_FIELDS), r
    assert r["status"] in STATUSES
    if r["status"] != "ok":
        assert r["events_per_s"] is None and r.get("reason")


@pytest.mark.parametrize("peer", [bytewax_peer, pathway_peer])
def test_python_peer_without_its_venv_is_not_available_with_the_reason(peer, monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(peer_venvs, "ensure", lambda venv, **_: f"could not install {venv.pins[0]}")
    r = peer.run(None, workload="count", inputs=["in"], input_events=10, expected_outputs=10,
                 workdir=tmp_path, tag="t", timeout_s=1)  # fmt: skip
    _well_formed(r)
    assert r["status"] == "not_available" and "could not install" in r["reason"]


def test_kafka_streams_without_java_is_not_available(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(kafka_streams.shutil, "which", lambda _name: None)
    r = kafka_streams.run(None, workload="count", inputs=["in"], input_events=10, expected_outputs=10,
                          workdir=tmp_path, tag="t", timeout_s=1)  # fmt: skip
    _well_formed(r)
    assert "java" in r["reason"]


def test_unsupported_workloads_say_why(tmp_path: Path) -> None:
    for peer in (bytewax_peer, pathway_peer, streamhouse_coalesced):
        for workload in set(peers.WORKLOADS) - set(peer.WORKLOADS):
            r = peer.run(None, workload=workload, inputs=[], input_events=5, expected_outputs=5,
                         workdir=tmp_path, tag="t", timeout_s=1)  # fmt: skip
            _well_formed(r)
            assert r["status"] == "not_available" and len(r["reason"]) > 20


def test_pathway_truth_is_the_final_value_of_every_key() -> None:
    records, truth, decode = pathway_peer._count("t", 2_000, 50)
    assert sum(next(iter(c)) for c in truth.values()) == 2_000
    assert decode({"user": "user-00001", "count": 3, "diff": -1}) == ("user-00001", 3, -1)
    assert sum(1 for _ in records()) == 2_000
    _, jtruth, _ = pathway_peer._join("o", "p", 2_000)
    assert all(isinstance(c, Counter) and sum(c.values()) >= 1 for c in jtruth.values())


@pytest.mark.slow
def test_peers_hook_gives_a_result_per_peer_and_workload(kafka_broker, unique_name, tmp_path) -> None:
    run_id = unique_name("peers")
    events = 3_000
    inp, table = f"bench-{run_id}-input", f"bench-{run_id}-users"
    prepare_input(kafka_broker, inp, events, 100)
    rows = prepare_table(kafka_broker, table, 100)["rows"]
    ctx = SimpleNamespace(
        client=kafka_broker, workdir=tmp_path, run_id=run_id, events=events, keys=100, windowed_events=events,
        input_topic=inp, table_topic=table, table_rows=rows,
    )  # fmt: skip
    out = peers.bench(ctx)
    assert len(out) == len(peers.PEER_MODULES) * len(peers.WORKLOADS)
    for r in out:
        _well_formed(r)
        if r["status"] == "ok":
            assert r["verification"]["correct"], r
