"""Hook (``run_all.EDGE_HOOKS``, result ``peers``): the peers beside Quix Streams and the raw loop.

Kafka Streams (``kafka_streams``), Bytewax (``bytewax_peer``) and Pathway (``pathway_peer``) -- and the
edge with its record cache on (``streamhouse_coalesced``), timed as Pathway is -- run the workloads each
supports, on the run's broker and on the same inputs as the edge's figures: the count and
the enrichment read ``ctx.input_topic`` / ``ctx.table_topic`` (the edge count's input), the windowed count
and the stream-stream join get their timestamped inputs from ``benchmarks/event_time.py`` (produced once
here, ``ctx.windowed_events`` records). Every system is a child process timed from outside
(``benchmarks/timed_child.py``); every output is checked afterwards against the same truth the edge's is,
and a wrong output reports no figure. A peer that cannot run here says why (``not_available``).

Each peer module defines ``SYSTEM``, ``WORKLOADS`` (the ones it implements) and
``run(client, *, workload, inputs, input_events, expected_outputs, workdir, tag, timeout_s) -> dict``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from benchmarks.common import not_available, verify_counts
from benchmarks.timed_child import unverified

WORKLOADS = ("count", "windowed-count", "enrichment", "stream-stream-join")
PEER_MODULES = (
    "benchmarks.systems.kafka_streams",
    "benchmarks.systems.bytewax_peer",
    "benchmarks.systems.pathway_peer",
    # the edge itself with the record cache on, timed like Pathway (to every key's final value)
    "benchmarks.systems.streamhouse_coalesced",
)


def bench(ctx: Any) -> list[dict[str, Any]]:
    from benchmarks.event_time import prepare_join_input, prepare_windowed_input, verify_join, verify_windowed
    from benchmarks.systems.streamhouse_count import verify_enrichment

    wevents = getattr(ctx, "windowed_events", None) or ctx.events
    peers = [_load(m) for m in PEER_MODULES]
    wanted = {w for p in peers if not isinstance(p, tuple) for w in p.WORKLOADS}
    inputs: dict[str, Any] = {}
    if "windowed-count" in wanted:
        topic = f"bench-{ctx.run_id}-peers-wcount"
        info, truth = prepare_windowed_input(ctx.client, topic, wevents, ctx.keys)
        inputs["windowed-count"] = ([topic], wevents, truth.outputs("partition", wevents), info, truth)
    if "stream-stream-join" in wanted:
        orders, payments = f"bench-{ctx.run_id}-peers-orders", f"bench-{ctx.run_id}-peers-payments"
        info, joins = prepare_join_input(ctx.client, orders, payments, wevents)
        inputs["stream-stream-join"] = (
            [orders, payments],
            info["events"],
            info["expected_joins"],
            info,
            joins,
        )
    inputs["count"] = ([ctx.input_topic], ctx.events, ctx.events, {"topic": ctx.input_topic}, None)
    inputs["enrichment"] = (
        [ctx.input_topic, ctx.table_topic], ctx.events, ctx.events,
        {"topic": ctx.input_topic, "table": ctx.table_topic, "table_rows": ctx.table_rows}, None,
    )  # fmt: skip

    def check(workload: str, r: dict[str, Any]) -> dict[str, Any]:
        if not r.get("events_per_s"):
            return r
        _, events, _, _, truth = inputs[workload]
        checks: dict[str, Callable[[], dict[str, Any]]] = {
            "count": lambda: verify_counts(ctx.client, r["output_topic"], events),
            "enrichment": lambda: verify_enrichment(ctx.client, r["output_topic"], events),
            "windowed-count": lambda: verify_windowed(
                ctx.client, r["output_topic"], truth, "partition", events,
                start_field="start", count_field="count",
            ),
            "stream-stream-join": lambda: verify_join(ctx.client, r["output_topic"], truth),
        }  # fmt: skip
        if r.get("verification", {}).get("correct") is not None:  # the peer checked its own (coalescing)
            return r
        v = checks[workload]()
        r["verification"] = v
        return r if v.get("correct") else unverified(r, f"output does not match the truth: {v}")

    out: list[dict[str, Any]] = []
    for i, peer in enumerate(peers):
        if isinstance(peer, tuple):
            system, reason = peer
            out += [not_available(system, w, 0, reason) for w in WORKLOADS]
            continue
        reason = peer.availability()
        for workload in WORKLOADS:
            topics, events, expected, info, _ = inputs[workload]
            if workload not in peer.WORKLOADS:
                why = peer.UNSUPPORTED.get(workload, "not implemented")
                out.append(not_available(peer.SYSTEM, workload, events, f"no {workload} here: {why}"))
                continue
            if reason:
                out.append(not_available(peer.SYSTEM, workload, events, reason))
                continue
            cap = 240.0
            timeout = ctx.timeout_s(cap) if hasattr(ctx, "timeout_s") else cap
            # a coalescing peer regenerates the input live from the same generator: it needs its size
            size = {"size": ctx.events if workload in ("count", "enrichment") else wevents, "keys": ctx.keys}
            r = peer.run(
                ctx.client, workload=workload, inputs=topics, input_events=events, expected_outputs=expected,
                workdir=ctx.workdir, tag=f"{ctx.run_id}-p{i}-{workload}", timeout_s=timeout,
                **(size if getattr(peer, "COALESCES", False) else {}),
            )  # fmt: skip
            r = check(workload, r)
            r.setdefault("input", info)
            if "outputs_per_input" not in r and events:
                r["outputs_per_input"] = round(expected / events, 4)
            out.append(r)
    _vs_streamhouse(out, getattr(ctx, "results", None) or {})
    return out


#: workload -> the quick set's benchmark holding the edge's figure on the same input
EDGE_FIGURES = {"count": "edge_count", "windowed-count": "edge_windowed", "enrichment": "edge_enrichment",
                "stream-stream-join": "edge_join"}  # fmt: skip


def _vs_streamhouse(out: list[dict[str, Any]], results: dict[str, list[dict[str, Any]]]) -> None:
    """``vs_streamhouse`` = the peer's rate / the edge's on the same workload in this run (when both ran)."""
    for r in out:
        edge = next(
            (e for e in results.get(EDGE_FIGURES[r["workload"]], [])
             if e.get("system") == "streamhouse-edge" and e.get("workload") == r["workload"]
             and e.get("events_per_s")),
            None,
        )  # fmt: skip
        if edge and r.get("events_per_s"):
            r["vs_streamhouse"] = round(r["events_per_s"] / edge["events_per_s"], 2)


def _load(module: str) -> Any:
    """The peer module, or ``(system, reason)`` when it does not import."""
    try:
        return importlib.import_module(module)
    except Exception as exc:
        return (module.rsplit(".", 1)[-1], f"{module} does not import: {type(exc).__name__}: {exc}")
