"""Operator tools for edge apps, the counterparts of Kafka's command-line tools.

``edge.tools.reset`` is Kafka's ``kafka-streams-application-reset``: rewind an application's input
offsets, delete its internal topics and its local state so that a rerun reprocesses its input.
"""

from edge.tools.reset import (
    ActiveMembersError,
    PartitionReset,
    ResetError,
    ResetPlan,
    ResetResult,
    ResetTarget,
    apply_reset,
    plan_reset,
    scan_partitions,
)

__all__ = [
    "ActiveMembersError",
    "PartitionReset",
    "ResetError",
    "ResetPlan",
    "ResetResult",
    "ResetTarget",
    "apply_reset",
    "plan_reset",
    "scan_partitions",
]
