"""Fault trials (kill -9 storms, bad records, broker restarts): sizes, instances, and the figures report.

``CHAOS_SCALE`` picks the sizes: unset / ``ci`` runs small trials (the whole set stays within a few
minutes), ``full`` the sizes the reliability figures are judged at (20 kills, 100k events, Kafka
Streams' 30 s commit interval); ``make chaos`` runs ``full`` and writes every trial's figures to
``CHAOS_REPORT`` (docs/reliability.md).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from edge.kafka import KafkaClientConfig
from tests.edge.runtime.harness import Instance

pytestmark = [pytest.mark.slow]


@dataclass(frozen=True)
class Scale:
    name: str
    events: int
    kills: int
    commit_interval_ms: int
    keys: int


SCALES = {
    "ci": Scale("ci", events=3_000, kills=3, commit_interval_ms=1_500, keys=50),
    "full": Scale("full", events=100_000, kills=20, commit_interval_ms=30_000, keys=1_000),
}


@pytest.fixture(scope="session")
def scale() -> Scale:
    name = os.environ.get("CHAOS_SCALE", "ci").strip().lower() or "ci"
    if name not in SCALES:
        raise pytest.UsageError(f"CHAOS_SCALE={name!r}: expected one of {sorted(SCALES)}")
    return SCALES[name]


_FIGURES: list[dict[str, Any]] = []


@pytest.fixture
def record_figures(request: pytest.FixtureRequest, scale: Scale) -> Callable[..., None]:
    """``record_figures(**numbers)``: one row of the reliability report for this trial."""

    def _record(**numbers: Any) -> None:
        kind = str(getattr(request.getfixturevalue("broker_kind"), "value", "tansu"))
        broker = "apache kafka" if kind == "kafka" else "tansu (embedded)"
        row = {"trial": request.node.name, "scale": scale.name, **numbers}
        row.setdefault("broker", broker)
        _FIGURES.append(row)

    return _record


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    target = os.environ.get("CHAOS_REPORT")
    if not target or not _FIGURES:
        return
    from tests.chaos.report import write_report

    write_report(Path(target), _FIGURES)
    Path(target).with_suffix(".json").write_text(json.dumps(_FIGURES, indent=2) + "\n")


@pytest.fixture
def spawn_instance(kafka_broker: KafkaClientConfig, tmp_path: Path) -> Iterator[Callable[..., Instance]]:
    """``spawn_instance(app_id, in_topic, out_topic, name=..., state_dir=..., **config)``: a real process
    (``streamhouse edge run``); every one still running is stopped at teardown."""
    started: list[Instance] = []

    def _spawn(
        app_id: str,
        in_topic: str,
        out_topic: str,
        *,
        name: str,
        state_dir: Path,
        attr: str = "counts",
        **config: object,
    ) -> Instance:
        config = {k.replace("_", "."): v for k, v in config.items()}
        inst = Instance(
            kafka_broker,
            app_id=app_id,
            state_dir=state_dir,
            in_topic=in_topic,
            out_topic=out_topic,
            attr=attr,
            config=config,
            log_dir=tmp_path,
            name=name,
        )
        started.append(inst)
        return inst

    yield _spawn
    for inst in started:
        inst.stop()


def wait_exit(inst: Instance, timeout: float) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        code = inst.proc.poll()
        if code is not None:
            return code
        time.sleep(0.1)
    # every thread's stack (the app dumps them on SIGUSR1): where it is stuck
    with contextlib.suppress(ProcessLookupError):
        os.kill(inst.proc.pid, signal.SIGUSR1)
    time.sleep(1.0)
    raise AssertionError(f"instance still running after {timeout}s:\n{inst.log_tail(200)}")
