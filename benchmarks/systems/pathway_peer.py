"""Pathway 0.33.0 as a benchmark peer (``benchmarks/peer_flows/pathway_flow.py``, its own venv).

Pathway coalesces: it computes in minibatches and writes each changed row once per batch, with a
retraction of the row it replaces, so it is timed by ``benchmarks/coalesced.py``: on a fresh input topic,
clock started once a warm-up record has come through, the events produced while it runs, clock stopped
when every key holds its true final value. The inputs are the same generators, seeds and sizes as the
other systems' (``benchmarks.common.generate_events``, ``benchmarks.event_time``), produced live instead
of beforehand. Pathway's windows have no cutoff here, so its windowed truth counts every record (the
Kafka-style systems drop records behind stream time: ~1 % of the windowed input).
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Hashable, Iterable
from pathlib import Path
from typing import Any

import orjson

from benchmarks import peer_venvs
from benchmarks.coalesced import WARMUP_KEY, run_coalesced
from benchmarks.common import DEFAULT_KEYS, generate_events, not_available

SYSTEM = "pathway"
WORKLOADS = ("count", "windowed-count", "stream-stream-join")
#: the peers hook passes the requested input size (the generators' n), not only the produced count
COALESCES = True
UNSUPPORTED = {
    "enrichment": "not built: each enriched event is its own row, so 'every key holds its final value' is "
    "every event joined; Pathway's left join would re-emit events when their user row arrives",
}
FLOW = Path(__file__).resolve().parents[1] / "peer_flows" / "pathway_flow.py"
AUTOCOMMIT_MS = 1000


def availability() -> str | None:
    got = peer_venvs.ensure(peer_venvs.PATHWAY)
    return got if isinstance(got, str) else None


def _warmup(topic: str, ts: int | None) -> tuple[str, bytes, bytes, int | None]:
    value = {"user": WARMUP_KEY.decode(), "seq": -1, "amount": 0.0, "kind": "warmup", "ts": ts or 0}
    return topic, WARMUP_KEY, orjson.dumps(value), ts


def _count(topic: str, n: int, keys: int) -> tuple[Any, dict[Hashable, Counter[Hashable]], Any]:
    totals = Counter(k.decode() for k, _ in generate_events(n, keys))

    def records() -> Iterable[tuple[str, bytes, bytes, int | None]]:
        return ((topic, k, v, None) for k, v in generate_events(n, keys))

    truth: dict[Hashable, Counter[Hashable]] = {k: Counter({c: 1}) for k, c in totals.items()}
    return records, truth, lambda v: (v["user"], v["count"], v["diff"])


def _windowed(topic: str, n: int, keys: int) -> tuple[Any, dict[Hashable, Counter[Hashable]], Any]:
    import numpy as np

    from benchmarks.event_time import WINDOW_MS, generate_windowed

    recs, wt = generate_windowed(n, keys)
    truth: dict[Hashable, Counter[Hashable]] = {}
    for k, col in zip(*np.nonzero(wt.all), strict=True):
        user = f"user-{int(k):05d}"
        truth[(user, (wt.first_window + int(col)) * WINDOW_MS)] = Counter({int(wt.all[k, col]): 1})

    def records() -> Iterable[tuple[str, bytes, bytes, int | None]]:
        return ((topic, k, v, ts) for k, v, ts in recs)

    return records, truth, lambda v: ((v["user"], v["start"]), v["count"], v["diff"])


def _join(orders: str, payments: str, n: int) -> tuple[Any, dict[Hashable, Counter[Hashable]], Any]:
    from benchmarks.event_time import JOIN_DIFF_MS, generate_join

    os_, ps, _ = generate_join(n)
    order_rows = {orjson.loads(v)["order"]: orjson.loads(v) for _, v, _ in os_}
    truth: dict[Hashable, Counter[Hashable]] = {}
    for _, v, _ in ps:
        p = orjson.loads(v)
        o = order_rows[p["order"]]
        if abs(p["ts"] - o["ts"]) <= JOIN_DIFF_MS:
            truth.setdefault(o["order"], Counter())[(p["paid"], p["ts"] - o["ts"])] += 1
    merged = sorted([(orders, k, v, ts) for k, v, ts in os_] + [(payments, k, v, ts) for k, v, ts in ps],
                    key=lambda r: r[3])  # fmt: skip

    def decode(v: dict[str, Any]) -> tuple[Hashable, Hashable, int] | None:
        if v.get("order") == -1:
            return "warmup", None, v["diff"]
        return v["order"], (v["paid"], v["dt"]), v["diff"]

    return (lambda: iter(merged)), truth, decode


def run(
    client: Any,
    *,
    workload: str,
    inputs: list[str],
    input_events: int,
    expected_outputs: int,
    workdir: Path,
    tag: str,
    timeout_s: float,
    size: int | None = None,
    keys: int = DEFAULT_KEYS,
) -> dict[str, Any]:
    """One workload, timed to every key's final value (``benchmarks/coalesced.py``). ``inputs`` name the
    topics the other systems read; Pathway gets fresh ones, filled while it runs from the same generator."""
    if workload not in WORKLOADS:
        return not_available(SYSTEM, workload, input_events, UNSUPPORTED.get(workload, "not implemented"))
    reason = availability()
    if reason:
        return not_available(SYSTEM, workload, input_events, reason)
    n = size or input_events
    topic, topic2, output = f"bench-{tag}-in", f"bench-{tag}-in2", f"bench-{tag}-out"
    if workload == "count":
        records, truth, decode = _count(topic, n, keys)
        warm, tops = [_warmup(topic, None)], [topic]
    elif workload == "windowed-count":
        from benchmarks.event_time import BASE_MS

        records, truth, decode = _windowed(topic, n, keys)
        warm, tops = [_warmup(topic, BASE_MS)], [topic]
    else:
        from benchmarks.event_time import BASE_MS

        records, truth, decode = _join(topic, topic2, n)
        order = {"order": -1, "customer": 0, "amount": 0.0, "ts": BASE_MS}
        pay = {"order": -1, "paid": 0.0, "ts": BASE_MS}
        warm = [
            (topic, WARMUP_KEY, orjson.dumps(order), BASE_MS),
            (topic2, WARMUP_KEY, orjson.dumps(pay), BASE_MS),
        ]
        tops = [topic, topic2]
    # Not the 2 s session timeout of the other systems: Pathway's reader polls its consumer between
    # batches only, and under load it missed heartbeats for 2 s, left the group and never got back to work.
    keep = ("fetch.wait.max.ms",)
    settings = {k: v for k, v in client.consumer("bench-pathway").items() if k in keep}
    cmd = [
        str(peer_venvs.PATHWAY.python), str(FLOW), workload, "--bootstrap", client.bootstrap_servers,
        "--input", topic, "--input2", topic2, "--output", output, "--group", f"bench-{tag}",
        "--autocommit-ms", str(AUTOCOMMIT_MS), "--config", json.dumps(settings),
    ]  # fmt: skip
    r = run_coalesced(
        client, system=SYSTEM, workload=workload, cmd=cmd, input_topics=tops, output_topic=output,
        records=records, warmup=warm, truth=truth, decode=decode, events=input_events,
        log_path=workdir / f"{tag}.log", timeout_s=timeout_s, env={"PYTHONPATH": ""},
        extra={"version": peer_venvs.versions(peer_venvs.PATHWAY),
               "settings": {"autocommit_duration_ms": AUTOCOMMIT_MS, "persistence": "none (state in memory)",
                            "threads": "Pathway default (1 process)", "client": settings,
                            "python": sys.version.split()[0]},
               "input": {"topics": tops, "events": input_events, "produced": "while the system runs"}},
    )  # fmt: skip
    return r
