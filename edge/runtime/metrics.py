"""The runtime's Prometheus families, built from plain counters when ``/metrics`` is scraped."""

from __future__ import annotations

from typing import TYPE_CHECKING

from edge.metrics import MetricFamily, render
from edge.runtime.state import State

if TYPE_CHECKING:
    from edge.runtime.app import StreamsApp

P = "streamhouse_edge_"


def render_metrics(app: StreamsApp) -> str:
    s = app.stats
    app_id = app.config.application_id
    base = {"application_id": app_id, "instance": app.instance_id}
    fams: list[MetricFamily] = []
    state = MetricFamily(P + "state", "gauge", "1 for the instance's current lifecycle state")
    for st in State:
        state.add(1 if app.state is st else 0, **base, state=st.value)
    fams.append(state)
    fams.append(
        MetricFamily(P + "records_processed_total", "counter", "Records processed by active tasks").add(
            s.records_processed, **base
        )
    )
    fams.append(
        MetricFamily(P + "records_per_second", "gauge", "Records processed per second (last ~1 s)").add(
            round(s.last_rate, 3), **base
        )
    )
    avg = (s.process_seconds / s.records_processed) if s.records_processed else 0.0
    fams.append(
        MetricFamily(P + "process_latency_seconds_avg", "gauge", "Mean processing time per record").add(
            avg, **base
        )
    )
    fams.append(
        MetricFamily(P + "process_seconds_total", "counter", "Time spent processing record batches").add(
            s.process_seconds, **base
        )
    )
    c = app.committer
    if c is not None:
        fams.append(MetricFamily(P + "commits_total", "counter", "Commits").add(c.commits, **base))
        fams.append(
            MetricFamily(P + "commit_seconds_total", "counter", "Time spent committing").add(
                c.commit_seconds_total, **base
            )
        )
        fams.append(
            MetricFamily(P + "commit_latency_seconds", "gauge", "Duration of the last commit").add(
                c.last_commit_seconds, **base
            )
        )
    lag = MetricFamily(P + "consumer_lag", "gauge", "Records behind the end of each assigned input partition")
    for (topic, p), v in sorted(s.consumer_lag.items()):
        lag.add(v, **base, topic=topic, partition=p)
    fams.append(lag)
    restored = MetricFamily(
        P + "restore_records", "gauge", "Records restored per store partition (last restore)"
    )
    restore_done = MetricFamily(P + "restore_done", "gauge", "1 when the store partition's restore finished")
    for pr in list(s.restores):
        labels = {**base, "store": pr.store, "task": pr.task_id, "topic": pr.topic, "partition": pr.partition}
        restored.add(pr.restored, **labels)
        restore_done.add(1 if pr.done else 0, **labels)
    fams += [restored, restore_done]
    fams.append(
        MetricFamily(P + "restored_records_total", "counter", "Records restored from changelogs").add(
            s.restored_records, **base
        )
    )
    fams.append(
        MetricFamily(P + "restoring", "gauge", "1 while stores are being restored").add(
            1 if app.restoring else 0, **base
        )
    )
    sizes = MetricFamily(P + "store_entries", "gauge", "Approximate entries per store and task")
    for (store, task), n in sorted(s.store_sizes.items()):
        sizes.add(n, **base, store=store, task=task, role="active")
    for (store, task), n in sorted(s.standby_store_sizes.items()):
        sizes.add(n, **base, store=store, task=task, role="standby")
    fams.append(sizes)
    sb = app.standby
    fams.append(
        MetricFamily(
            P + "standby_records_applied_total", "counter", "Changelog records applied to standbys"
        ).add(sb.records_applied if sb is not None else 0, **base)
    )
    errors = MetricFamily(P + "errors_total", "counter", "Records that failed, by kind")
    for kind in ("deserialization", "processing"):
        errors.add(s.errors.get(f"{kind}_errors", 0), **base, kind=kind)
    fams.append(errors)
    fams.append(
        MetricFamily(P + "dlq_records_total", "counter", "Records sent to the dead-letter topic").add(
            s.errors.get("dead_letters", 0), **base
        )
    )
    col = app.collector
    dlq = MetricFamily(
        P + "dlq_outcomes_total",
        "counter",
        "Dead letters by outcome: delivered, truncated (value cut to fit message.max.bytes), failed (lost)",
    )
    dlq_outcomes = (
        {"delivered": col.dlq_delivered, "truncated": col.dlq_truncated, "failed": col.dlq_failed}
        if col is not None
        else {}
    )
    for outcome in ("delivered", "truncated", "failed"):
        dlq.add(dlq_outcomes.get(outcome, 0), **base, outcome=outcome)
    fams.append(dlq)
    provider = app.stores
    dropped = MetricFamily(
        P + "dropped_records_total",
        "counter",
        "Records dropped by an active task: late for a closed window, invalid timestamp, null key or value "
        "where one is required (Kafka's task-level dropped-records; restarts at 0 when a task moves)",
    )
    for (st, p), n in provider.dropped_records() if provider is not None else []:
        dropped.add(n, **base, task=f"{st}_{p}")
    fams.append(dropped)
    fams.append(
        MetricFamily(P + "active_tasks", "gauge", "Active tasks").add(
            provider.active_task_count() if provider is not None else 0, **base
        )
    )
    fams.append(
        MetricFamily(P + "standby_tasks", "gauge", "Standby tasks").add(
            len(sb.tasks) if sb is not None else 0, **base
        )
    )
    fams.append(
        MetricFamily(P + "thread_replacements_total", "counter", "Failures answered with replace_thread").add(
            s.replaced_threads, **base
        )
    )
    fams.append(
        MetricFamily(P + "rebalances_total", "counter", "Partition assignments received").add(
            s.rebalances, **base
        )
    )
    wd = app.watchdog
    fams.append(
        MetricFamily(
            P + "cluster_unavailable_seconds",
            "gauge",
            "Seconds since no broker answered (0 while reachable); the app gives up at "
            "cluster.unavailable.timeout.ms",
        ).add(round(wd.unavailable_for, 3) if wd is not None else 0.0, **base)
    )
    limiter = app.connection_log
    fams.append(
        MetricFamily(
            P + "connection_errors_total",
            "counter",
            "Broker connection failures reported by the Kafka clients (logged rate-limited)",
        ).add(limiter.total, **base)
    )
    return render(fams)
