"""Render the fault trials' figures (``make chaos``) as docs/reliability.md: one table per kind of trial."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

_HEADER = """# Reliability: fault trials

Written by `make chaos` (`CHAOS_SCALE=full pytest tests/chaos`); the CI runs the same trials at small
sizes (`scale` column). Kill storms: two instances, one killed with SIGKILL at a random moment between
commits and restarted on its state directory, `kills` times, while the input is produced. "state over
truth" is the largest difference between a key's count in the stores (read through interactive queries)
and the true count of inputs: it must be 0. "outputs missing" counts true count values that never
appeared on the output topic: it must be 0 (under at-least-once an output may repeat after a crash:
"outputs repeated"). Bad records: every kind (malformed JSON, wrong type, oversized, empty, null key,
non-UTF-8) in one stream, then a restart.

"""


def _table(rows: list[dict[str, Any]]) -> list[str]:
    keys: list[str] = []
    for row in rows:
        for k in row:
            if k not in keys:
                keys.append(k)
    lines = ["| " + " | ".join(k.replace("_", " ") for k in keys) + " |\n", "|" + "---|" * len(keys) + "\n"]
    for row in rows:
        lines.append("| " + " | ".join(str(row.get(k, "")) for k in keys) + " |\n")
    return lines


def write_report(path: Path, rows: list[dict[str, Any]]) -> None:
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(str(row["trial"]).split("[", 1)[0], []).append(row)
    lines = [_HEADER, f"Run: {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC\n"]
    for name, group in groups.items():
        lines.append(f"\n## {name}\n\n")
        lines += _table(group)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(lines))
