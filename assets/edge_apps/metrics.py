"""Read an edge app's ``/metrics`` (Prometheus text) into the few figures the lineage graph shows.

The app runs outside Dagster, so this is a best-effort read with a short timeout: an app that is not
running is a normal state to record, never an error of the observation.
"""

from __future__ import annotations

import re
import urllib.error
import urllib.request
from dataclasses import dataclass, field

PREFIX = "streamhouse_edge_"
_LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


@dataclass
class LiveMetrics:
    reachable: bool
    url: str
    error: str = ""
    #: metric family (without the ``streamhouse_edge_`` prefix) -> value summed over its label sets
    totals: dict[str, float] = field(default_factory=dict)
    #: lifecycle states reported as current (one per instance behind the URL)
    states: list[str] = field(default_factory=list)


def parse(text: str) -> tuple[dict[str, float], list[str]]:
    totals: dict[str, float] = {}
    states: list[str] = []
    for line in text.splitlines():
        match = _LINE.match(line)
        if line.startswith("#") or match is None or not match.group(1).startswith(PREFIX):
            continue
        name, labels, raw = match.group(1)[len(PREFIX) :], match.group(2) or "", match.group(3)
        try:
            value = float(raw)
        except ValueError:
            continue
        if name == "state":
            if value == 1:
                states += [v for k, v in _LABEL.findall(labels) if k == "state"]
            continue
        totals[name] = totals.get(name, 0.0) + value
    return totals, states


def fetch(server: str, timeout_s: float = 2.0) -> LiveMetrics:
    """``http://<server>/metrics``, or why it could not be read."""
    url = f"http://{server}/metrics"
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as resp:
            text = resp.read().decode("utf-8", "replace")
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return LiveMetrics(False, url, error=f"not reachable at {url}: {reason}")
    totals, states = parse(text)
    return LiveMetrics(True, url, totals=totals, states=states)
