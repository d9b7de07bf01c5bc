"""The data contract (docs/data-contract.md) as data: per-table descriptions and columns.

The contract is written for people first; Dagster asset descriptions are read from it so the UI shows
the rules an analyst reads, not a second, drifting summary. A table is a ``### `layer.name``` section:
its text up to the next heading is the description, its first markdown table lists the columns.

Loading must never break a code location: a missing or unreadable document (an installed wheel ships
no ``docs/``) or a missing section gives the caller's fallback text.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

#: Where the contract lives in a checkout (``assets/`` is next to ``docs/``).
CONTRACT_PATH = Path(__file__).resolve().parent.parent / "docs" / "data-contract.md"

_HEADING = re.compile(r"^(#{1,3})\s+(.*?)\s*$")
_TABLE_NAME = re.compile(r"^`?([a-z_]+\.[a-z0-9_*<>]+)`?")


@cache
def _sections(path: Path = CONTRACT_PATH) -> dict[str, str]:
    """``layer.name`` -> the section's markdown (without its heading); {} when the file is unreadable."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return {}
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        heading = _HEADING.match(line)
        if heading:
            current = None
            name = _TABLE_NAME.match(heading.group(2)) if len(heading.group(1)) == 3 else None
            if name:
                current = sections.setdefault(name.group(1), [])
            continue
        if current is not None:
            current.append(line)
    return {name: "\n".join(lines).strip() for name, lines in sections.items()}


def tables(path: Path = CONTRACT_PATH) -> list[str]:
    """Every table the contract documents (``silver.orders``, ``bronze.<topic>``, ...)."""
    return list(_sections(path))


def description(table: str, fallback: str, path: Path = CONTRACT_PATH) -> str:
    """The contract's section for ``table`` (``gold.click_sessions``), or ``fallback`` without one."""
    return _sections(path).get(table) or fallback


def columns(table: str, path: Path = CONTRACT_PATH) -> dict[str, str]:
    """Column -> type from the first table of ``table``'s section (rows ``| `name` | type | ...``);
    {} when the contract has no such section."""
    out: dict[str, str] = {}
    section = _sections(path).get(table, "")
    started = False
    for line in section.splitlines():
        if not line.startswith("|"):
            if started:
                break
            continue
        started = True
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        name = cells[0].strip("`")
        if len(cells) >= 2 and re.fullmatch(r"[a-z_][a-z0-9_]*", name) and name != "column":
            out[name] = cells[1].strip("`")
    return out
