"""The system-test ports in the test driver: the outputs Kafka's drivers check, in seconds, no broker.

The Kafka runs (test_kafka_system_tests.py) prove the ports against Kafka's verdicts; these catch a
broken port before a slow run does, and pin the sabotage knob to exactly one aggregate.
"""

from __future__ import annotations

import pytest

from edge import Serdes, TopologyTestDriver
from edge.processor import StreamsConfig
from examples.system_tests import eos_client, smoke_client
from examples.system_tests.common import SABOTAGE_ENV

DAY = 86_400_000
STRING, INT, LONG, DOUBLE = Serdes.string(), Serdes.int(), Serdes.long(), Serdes.double()


def _smoke_outputs(monkeypatch: pytest.MonkeyPatch, sabotage: str = "") -> dict[str, dict[str, object]]:
    """Kafka's driver's input for one key ``"0-3"`` (values 0..3 two days ago), then the flush record."""
    if sabotage:
        monkeypatch.setenv(SABOTAGE_ENV, sabotage)
    else:
        monkeypatch.delenv(SABOTAGE_ENV, raising=False)
    topology = smoke_client.topology("t")
    serdes = {"echo": INT, "min": INT, "max": INT, "dif": INT, "sum": LONG, "cnt": LONG, "avg": DOUBLE}
    serdes |= {"tagg": LONG, "min-suppressed": INT}
    now = 10 * DAY + 5_000
    with TopologyTestDriver(topology, StreamsConfig("SmokeTest")) as driver:
        data = driver.create_input_topic("data", STRING, INT)
        outs = {t: driver.create_output_topic(t, STRING, s) for t, s in serdes.items()}
        for i, value in enumerate([2, 0, 3, 1]):
            data.pipe_input("0-3", value, now - 2 * DAY + i)
        data.pipe_input("flush", 0, now)
        return {t: out.read_key_values_to_map() for t, out in outs.items()}


def test_smoke_port_computes_what_the_smoke_driver_expects(monkeypatch: pytest.MonkeyPatch) -> None:
    got = _smoke_outputs(monkeypatch)
    assert got["echo"] == {"0-3": 1}  # the flush records are not echoed
    assert got["min"] == {"0-3": 0}
    assert got["max"] == {"0-3": 3}
    assert got["sum"] == {"0-3": 6}
    assert got["cnt"] == {"0-3": 4}
    assert got["dif"] == {"0-3": 3}
    assert got["avg"] == {"0-3": 1.5}
    # count-by-count: one key has 4 records; the counts it passed through drop back to 0 (Kafka's
    # verifyTAgg expects 0 for every count no key ends at)
    assert got["tagg"] == {"1": 0, "2": 0, "3": 0, "4": 1}
    # one final result per window, keyed as Java's Windowed.toString() prints it
    ((key, value),) = got["min-suppressed"].items()
    assert key.startswith("[0-3@") and key.endswith("]") and value == 0


def test_sabotage_makes_only_the_sums_wrong(monkeypatch: pytest.MonkeyPatch) -> None:
    got = _smoke_outputs(monkeypatch, "sum")
    assert got["sum"] == {"0-3": 5}
    assert got["min"] == {"0-3": 0} and got["max"] == {"0-3": 3} and got["cnt"] == {"0-3": 4}


@pytest.mark.parametrize("complex_", [False, True])
def test_eos_port_emits_one_running_aggregate_per_input(
    complex_: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """EosTestDriver.verify pairs each input with one output, in order: no record cache may merge them."""
    monkeypatch.delenv(SABOTAGE_ENV, raising=False)
    config = StreamsConfig("EosTest", default_key_serde=STRING, default_value_serde=INT, cache_max_bytes=0)
    with TopologyTestDriver(eos_client.topology(complex_), config) as driver:
        data = driver.create_input_topic("data", STRING, INT)
        echo = driver.create_output_topic("echo", STRING, INT)
        mins = driver.create_output_topic("min", STRING, INT)
        sums = driver.create_output_topic("sum", STRING, LONG)
        for value in (5, 3, 7):
            data.pipe_input("k", value)
        assert echo.read_values_to_list() == [5, 3, 7]
        assert mins.read_values_to_list() == [5, 3, 3]
        assert sums.read_values_to_list() == [5, 8, 15]
        if complex_:
            repartition = driver.create_output_topic("repartition", STRING, INT)
            assert repartition.read_values_to_list() == [5, 3, 7]
