"""Render metric families in the Prometheus text exposition format (version 0.0.4).

The runtime keeps plain counters on its hot path and builds families only when ``/metrics`` is
scraped, so metrics cost nothing per record beyond an integer increment.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _fmt(value: float) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


@dataclass
class MetricFamily:
    name: str
    type: str  # counter | gauge | untyped
    help: str
    samples: list[tuple[Mapping[str, object], float]] = field(default_factory=list)

    def add(self, value: float, **labels: object) -> MetricFamily:
        self.samples.append((labels, value))
        return self


def render(families: Iterable[MetricFamily]) -> str:
    out: list[str] = []
    for fam in families:
        out.append(f"# HELP {fam.name} {fam.help}")
        out.append(f"# TYPE {fam.name} {fam.type}")
        for labels, value in fam.samples:
            if labels:
                body = ",".join(f'{k}="{_escape(str(v))}"' for k, v in labels.items())
                out.append(f"{fam.name}{{{body}}} {_fmt(value)}")
            else:
                out.append(f"{fam.name} {_fmt(value)}")
    return "\n".join(out) + "\n"
