"""One quality verdict, said with the same words and colours wherever a result is shown.

An expectation's result is one of three verdicts:

* ``passed`` (green): it held;
* ``warning`` (yellow): a ``warn`` or ``drop`` expectation did not hold (reported, blocks nothing), or
  an expectation could not be compared (its table or an optional input does not exist yet);
* ``error`` (red): a ``fail`` expectation did not hold: what is downstream of the table does not
  materialize in that run, and ``streamhouse check`` exits 1.

A table's (a validation's) verdict is its worst expectation's. ``streamhouse check``, ``streamhouse
describe``, the Dagster asset checks (their description and ``verdict`` metadata) and Data Docs use
these words and colours; a warning is never called a failure. Dagster's UI has a fixed vocabulary: it
shows a warning as a *yellow* "Failed" badge with a warning sign (``passed=False`` with severity
``WARN``, the only way Dagster has to say "did not hold, but only warn"), an error as a *red* "Failed",
and a pass as a green "Passed"; docs/quality.md gives the mapping. This module imports nothing heavy:
``describe`` uses it without loading Dagster's definitions or Great Expectations.
"""

from __future__ import annotations

from collections.abc import Iterable

PASSED = "passed"
WARNING = "warning"
ERROR = "error"
#: Worst last: a table's verdict is the last of these that one of its expectations has.
ORDER = (PASSED, WARNING, ERROR)
#: The colour of each verdict (terminal colour names; Data Docs use Bootstrap's success/warning/danger,
#: Dagster its green/yellow/red badges).
COLOURS = {PASSED: "green", WARNING: "yellow", ERROR: "red"}
#: What each verdict does, as the Dagster check's description says it.
EFFECT = {
    PASSED: "",
    WARNING: "reported, blocks nothing",
    ERROR: "blocks what is downstream",
}


def verdict(success: bool, compared: bool, action: str) -> str:
    """The verdict of one expectation's result: ``action`` is its ``fail``/``warn``/``drop``."""
    if success:
        return PASSED
    if compared and action == "fail":
        return ERROR
    return WARNING


def worst(verdicts: Iterable[str]) -> str:
    """A table's verdict: the worst of its expectations' (``passed`` when it has none)."""
    return max(verdicts, key=ORDER.index, default=PASSED)


def from_dagster(status: str, severity: str | None) -> str:
    """The verdict of a Dagster check execution (``AssetCheckExecutionRecordStatus`` value and the
    evaluation's severity): ``FAILED`` with severity ``WARN`` is a warning, not a failure. A check
    that did not finish keeps a description of its state (``in progress``, ``execution failed``)."""
    if status == "SUCCEEDED":
        return PASSED
    if status == "FAILED":
        return WARNING if severity == "WARN" else ERROR
    return {
        "PLANNED": "in progress",
        "EXECUTION_FAILED": "error (the check itself failed to run)",
        "SKIPPED": "skipped",
    }.get(status, status.lower())
