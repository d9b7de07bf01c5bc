"""Per-record warnings, summarised: one line per cause per interval instead of one line per record.

Kafka Streams logs a WARN for every record it skips (an expired window, a deserialization error under
log-and-continue, a null key, ...). One late batch then floods the log: after ``streamhouse generate`` the
demo's sessions app printed 9,316 ``Skipping record for expired window`` lines, one per record, and
nothing else could be read. The records are not lost from view: every one is still counted in the task's
dropped-records metric (``StreamTask.dropped_records``, ``streamhouse_edge_dropped_records_total``) or
the error counters; the log only has to say *that* it happens, how often, and show what one looks like.

So each call site passes a *cause* (``"Skipping record for expired window"``, ``"Skipping record due to
deserialization error"``, ...: Kafka's message without the record's details) with Kafka's own message for
the record:

* the first record of a cause is logged as Kafka logs it (so a single late record reads as before);
* the next ones are only counted, keeping the latest as the example;
* at most every ``interval_s`` a summary line names the cause, the count since the last line, and the
  example (in Kafka's text): ``Skipping record for expired window: 9,315 more records in the last 10 s;
  the latest: Skipping record for expired window. topic=[...] partition=[...] offset=[...] ...``;
* a cause quiet for ``interval_s`` starts over (its next record is logged as a first one);
* :meth:`RecordWarnings.report_due` (called on each task commit) logs the counts whose interval has
  passed, and :meth:`RecordWarnings.report_pending` (on task close) all that is left, so the log never
  ends with records counted but unreported.

Only the warning path pays for this: a record that is not skipped never reaches this module. The state is
process-wide (logging is), keyed by logger and cause, behind a lock (tasks run on several threads).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

#: Seconds between two summary lines of one cause.
DEFAULT_INTERVAL_S = 10.0


class _Cause:
    __slots__ = ("args", "logger", "msg", "since", "suppressed")

    def __init__(self, logger: logging.Logger, since: float) -> None:
        self.logger = logger
        #: records counted since the last line
        self.suppressed = 0
        #: when the last line of this cause was logged
        self.since = since
        #: the latest suppressed record's message and arguments (formatted only when logged)
        self.msg = ""
        self.args: tuple[Any, ...] = ()


class RecordWarnings:
    """Rate-limited per-record warnings: the first per cause as is, then one summary per interval."""

    def __init__(
        self, interval_s: float = DEFAULT_INTERVAL_S, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.interval_s = interval_s
        self._clock = clock
        self._lock = threading.Lock()
        self._causes: dict[tuple[str, str], _Cause] = {}
        #: every record seen, logged or not, per cause (tests, diagnostics)
        self.totals: dict[str, int] = {}

    def warn(self, logger: logging.Logger, cause: str, msg: str, *args: Any) -> None:
        """One skipped record: ``msg % args`` is Kafka's message for it, ``cause`` names the kind of skip."""
        now = self._clock()
        key = (logger.name, cause)
        summary: tuple[int, float, str, tuple[Any, ...]] | None = None
        with self._lock:
            self.totals[cause] = self.totals.get(cause, 0) + 1
            entry = self._causes.get(key)
            if entry is None or (entry.suppressed == 0 and now - entry.since >= self.interval_s):
                self._causes[key] = _Cause(logger, now)
                first = True
            else:
                first = False
                entry.suppressed += 1
                entry.msg, entry.args = msg, args
                if now - entry.since < self.interval_s:
                    return
                summary = (entry.suppressed, now - entry.since, entry.msg, entry.args)
                entry.suppressed, entry.since = 0, now
        if first:
            logger.warning(msg, *args)
        elif summary is not None:
            _summarise(logger, cause, *summary)

    def report_due(self) -> None:
        """Log the causes whose interval has passed with records still unreported (a flood that stopped)."""
        if not self._causes:
            return
        now = self._clock()
        self._report(lambda entry: now - entry.since >= self.interval_s, now)

    def report_pending(self) -> None:
        """Log every count not reported yet (a task closing), whatever the interval."""
        if not self._causes:
            return
        self._report(lambda entry: True, self._clock())

    def _report(self, due: Callable[[_Cause], bool], now: float) -> None:
        lines: list[tuple[logging.Logger, str, int, float, str, tuple[Any, ...]]] = []
        with self._lock:
            for (_, cause), entry in self._causes.items():
                if entry.suppressed and due(entry):
                    lines.append(
                        (entry.logger, cause, entry.suppressed, now - entry.since, entry.msg, entry.args)
                    )
                    entry.suppressed, entry.since = 0, now
        for logger, cause, count, seconds, msg, args in lines:
            _summarise(logger, cause, count, seconds, msg, args)

    def reset(self) -> None:
        """Forget every cause (tests start from a clean log)."""
        with self._lock:
            self._causes.clear()
            self.totals.clear()


def _summarise(
    logger: logging.Logger, cause: str, count: int, seconds: float, msg: str, args: tuple[Any, ...]
) -> None:
    example = msg % args if args else msg
    logger.warning(
        "%s: %s more %s in the last %.0f s; the latest: %s",
        cause,
        f"{count:,}",
        "record" if count == 1 else "records",
        seconds,
        example,
    )


#: The process-wide summariser every operator and handler logs through.
RECORD_WARNINGS = RecordWarnings()
warn_record = RECORD_WARNINGS.warn
