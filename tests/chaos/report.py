"""Render the fault trials' figures (``make chaos``) as docs/reliability.md: one table per kind of trial.

A run that covers only some trials (one test file, ``-k``, one broker, one scale) replaces only their
rows: a row stands for one trial at one scale on one broker and says when it was run; every other row
and section of the existing report, and the text before the first section, stay as they are.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

_HEADER = """# Reliability: fault trials

Written by `make chaos` (`CHAOS_SCALE=full pytest tests/chaos`); the CI runs the same trials at small
sizes (`scale` column). Kill storms: two instances, killed with SIGKILL `kills` times while the input
is produced and restarted on their state directories; every other kill lands *inside* a commit (after
the changelog records and commit markers were acknowledged, before the input offsets are committed:
`kills inside commit`), and under at-least-once the survivor takes every task over before the victim
restarts, promoting its standbys. "state over truth" is the largest difference between a key's count in
the stores (read through interactive queries) and the true count of inputs: it must be 0. "outputs
missing" counts true count values that never appeared on the output topic: it must be 0 (under
at-least-once an output may repeat after a crash: "outputs repeated"). Bad records: every kind
(malformed JSON, wrong type, oversized, empty, null key, non-UTF-8) in one stream, then a restart.
Dagster kills: a bronze → silver → gold pass in its own process SIGKILLs itself at one Delta commit
(`kill at`: before/after the n-th commit of a table), is retried, and every table must then load and
equal an uninterrupted run's (`tables differing` must be 0).
"""

_SECTION = re.compile(r"^## (\S+)\s*$", re.MULTILINE)
_RUN_LINE = re.compile(r"^Run: .*\n", re.MULTILINE)


def _table(rows: list[dict[str, Any]]) -> list[str]:
    keys: list[str] = []
    for row in rows:
        for k in row:
            if k not in keys:
                keys.append(k)
    if "run" in keys:  # when a row was measured: the last column
        keys.append(keys.pop(keys.index("run")))
    lines = ["| " + " | ".join(k.replace("_", " ") for k in keys) + " |\n", "|" + "---|" * len(keys) + "\n"]
    for row in rows:
        lines.append("| " + " | ".join(str(row.get(k, "")) for k in keys) + " |\n")
    return lines


def _split(text: str) -> tuple[str, dict[str, str]]:
    """The text before the first section, and each section's body (after its heading) by name."""
    matches = list(_SECTION.finditer(text))
    if not matches:
        return text, {}
    sections = {}
    for m, nxt in zip(matches, [*matches[1:], None], strict=True):
        sections[m.group(1)] = text[m.end() : nxt.start() if nxt else len(text)]
    return text[: matches[0].start()], sections


def _rows(body: str) -> list[dict[str, Any]]:
    """The rows of the table in a section body, keyed as recorded (underscores for spaces)."""
    lines = [line.strip() for line in body.splitlines() if line.strip().startswith("|")]
    if len(lines) < 2:
        return []
    header = [c.strip().replace(" ", "_") for c in lines[0].strip("|").split("|")]
    return [
        dict(zip(header, (c.strip() for c in line.strip("|").split("|")), strict=False)) for line in lines[2:]
    ]


def _key(row: dict[str, Any]) -> tuple[str, str, str]:
    return str(row.get("trial", "")), str(row.get("scale", "")), str(row.get("broker", ""))


def write_report(path: Path, rows: list[dict[str, Any]]) -> None:
    """Write ``rows`` into the report at ``path``: the rows of one trial, scale and broker replace that
    trial's rows of the same scale and broker; every other row, section and the text before the
    sections stay."""
    run = f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC"
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        row = dict(row)
        row.setdefault("run", run)  # rows carried over from a figures file keep their own
        groups.setdefault(str(row["trial"]).split("[", 1)[0], []).append(row)
    preamble, sections = _split(path.read_text()) if path.exists() else (_HEADER, {})
    # reports written before rows carried their run time had one "Run:" line up front
    preamble = _RUN_LINE.sub("", preamble).rstrip("\n") + "\n"
    for name, group in groups.items():
        new: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
        for row in group:
            new.setdefault(_key(row), []).append(row)
        merged: list[dict[str, Any]] = []
        done: set[tuple[str, str, str]] = set()
        for row in _rows(sections.get(name, "")):
            key = _key(row)
            if key not in new:
                merged.append(row)
            elif key not in done:  # this run's rows of the trial take the place of the old ones
                merged += new[key]
                done.add(key)
        merged += [row for key, rows in new.items() if key not in done for row in rows]
        sections[name] = "".join(_table(merged))
    lines = [preamble]
    for name, body in sections.items():
        lines.append(f"\n## {name}\n\n{body.strip(chr(10))}\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(lines))
