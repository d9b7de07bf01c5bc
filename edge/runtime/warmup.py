"""Warm-ups before joining (KIP-441's ``acceptable.recovery.lag``, ``max.warmup.replicas``,
``probing.rebalance.interval.ms``), as far as librdkafka's assignors allow.

Kafka Streams' assignor gives a joining instance a stateful task only once that instance's copy of the
task's state is within ``acceptable.recovery.lag`` records of the changelog's end: until then the old
owner keeps the task active and the new instance restores a *warm-up* copy (at most
``max.warmup.replicas`` at a time), and a *probing* rebalance every ``probing.rebalance.interval.ms``
checks whether it caught up. librdkafka's ``cooperative-sticky`` assignor knows nothing of state: it
moves partitions to a joining member as soon as it joins. So here the joining instance gates its own
joining instead:

1. it reads the instances topic (:mod:`edge.runtime.metadata`) to the end: when no other instance runs
   the application it joins at once (nothing to take over from a running owner);
2. it predicts the stateful tasks the sticky assignor will move to it -- its fair share of the tasks,
   taken one at a time from the most loaded instance, the lowest partition first (what librdkafka's
   sticky assignor was seen to do) -- and warms up at most ``max.warmup.replicas`` of them as standby
   copies (:class:`~edge.runtime.standby.StandbyManager`), checkpointed where the active task will look;
3. it subscribes (joins the group) once each warm-up is within ``acceptable.recovery.lag`` of its
   changelog's end, or after ``probing.rebalance.interval.ms`` at the latest.

The tasks that do move then restore only the tail the old owner wrote meanwhile, while the owner keeps
processing them until the hand-over (cooperative: only those tasks pause). Differences from Kafka
Streams: the tasks warmed up are a prediction (a task the assignor gives instead restores in full, as
without warm-ups), warm-ups happen only when an instance joins (not after every rebalance), and the
lag is checked continuously rather than by probing rebalances -- the interval only bounds the wait.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import TopicPartition

from edge.runtime.tasks import TaskKey

log = logging.getLogger(__name__)

#: how long a joining instance waits to have read who else runs the application
METADATA_WAIT_S = 10.0
#: how often the warm-ups' lag is measured (a round trip to the brokers per changelog partition)
LAG_CHECK_S = 0.5
#: how long after joining a warm-up is kept for its hand-over (a cooperative hand-over takes a few
#: rebalances: the owner revokes first, the next rebalance assigns); then it is an ordinary standby or
#: closed
HAND_OVER_S = 60.0


def warmups_enabled(config: Any, protocol: Any) -> bool:
    """Warm-ups need the cooperative protocol (eager revokes every task anyway) and a positive bound."""
    return bool(protocol.cooperative and config.max_warmup_replicas > 0)


def predict_moves(
    owned: dict[str, list[TaskKey]], stateful: set[TaskKey], total_tasks: int, limit: int
) -> list[TaskKey]:
    """The stateful tasks a member joining instances that own ``owned`` (instance -> tasks) is likely
    to receive, at most ``limit``: its fair share of ``total_tasks``, each taken from the instance then
    owning the most tasks (ties: the lower id), the lowest of its tasks first."""
    load = {inst: sorted(tasks) for inst, tasks in owned.items() if tasks}
    share = total_tasks // (len(owned) + 1)
    picked: list[TaskKey] = []
    for _ in range(share):
        if not load:
            break
        donor = min(load, key=lambda i: (-len(load[i]), i))
        task = load[donor].pop(0)
        if not load[donor]:
            del load[donor]
        if task in stateful:
            picked.append(task)
            if len(picked) >= limit:
                break
    return picked


class WarmupGate:
    """Runs on the stream thread before it subscribes: see the module docstring."""

    def __init__(
        self,
        *,
        config: Any,
        tasks: Any,
        metadata: Any,
        stop: threading.Event,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.tasks = tasks
        self.metadata = metadata
        self._stop = stop
        self._clock = clock
        #: what the last warm-up did, for logs and tests: task -> changelog records behind at the end
        self.final_lag: dict[TaskKey, int] = {}

    def run(self) -> list[TaskKey]:
        """Warm up and return once joining is due; returns the tasks warmed up."""
        tm = self.tasks
        standby = tm.standby
        if standby is None or not warmups_enabled(self.config, tm.protocol):
            return []
        if not self.metadata.caught_up.wait(METADATA_WAIT_S):
            log.warning("instances topic not read within %ss: joining without warm-ups", METADATA_WAIT_S)
            return []
        candidates = self._candidates()
        if not candidates:
            return []
        standby.reconcile(set(candidates))
        warm = sorted(k for k in candidates if k in standby.tasks)
        if not warm:
            return []
        tm.publish_assignment()
        bound_s = self.config.probing_rebalance_interval_ms / 1000
        deadline = self._clock() + bound_s
        acceptable = self.config.acceptable_recovery_lag
        log.info(
            "warming up tasks %s before joining (acceptable.recovery.lag=%d, at most %gs)",
            warm,
            acceptable,
            bound_s,
        )
        started = self._clock()
        next_check = 0.0
        lag: dict[TaskKey, int] = {}
        while not self._stop.is_set():
            standby.poll()
            now = self._clock()
            if now >= next_check:
                next_check = now + LAG_CHECK_S
                lag = self._lag(standby, warm)
                if all(v <= acceptable for v in lag.values()):
                    log.info("warm-ups %s caught up in %.1fs (lag %s): joining", warm, now - started, lag)
                    break
                if now >= deadline:
                    log.warning(
                        "warm-ups %s still behind after %gs (lag %s): joining anyway", warm, bound_s, lag
                    )
                    break
            time.sleep(0.01)
        self.final_lag = lag
        standby.checkpoint_all(min_interval_s=0)
        until = time.monotonic() + HAND_OVER_S
        tm.warmups = dict.fromkeys(warm, until)
        return warm

    def _candidates(self) -> list[TaskKey]:
        md = self.metadata
        me = md.local.instance_id
        owned: dict[str, list[TaskKey]] = {}
        for info in md.live_instances():
            if info.instance_id == me:
                continue
            owned[info.instance_id] = [(st, p) for st, ps in info.active.items() for p in ps]
        if not any(owned.values()):
            return []
        tm = self.tasks
        standby = tm.standby
        total = sum(st.partitions for st in tm.plan.subtopologies.values())
        stateful = {
            (st.id, p)
            for st in tm.plan.subtopologies.values()
            if standby.eligible(st.id)
            for p in range(st.partitions)
        }
        return predict_moves(owned, stateful, total, self.config.max_warmup_replicas)

    @staticmethod
    def _lag(standby: Any, keys: list[TaskKey]) -> dict[TaskKey, int]:
        """Changelog records each warm-up still has to apply (its partitions summed)."""
        out: dict[TaskKey, int] = {}
        for key in keys:
            task = standby.tasks.get(key)
            if task is None:
                continue
            behind = 0
            for topic, p in task.by_tp:
                _, high = standby.watermarks(TopicPartition(topic, p))
                behind += max(0, high - (task.offsets.get((topic, p), -1) + 1))
            out[key] = behind
        return out
