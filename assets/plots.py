"""Small plots for gold materializations (what a person would rather look at than read).

Each plot is drawn twice: a PNG (written beside the lake, ``plot_path`` in the metadata) and a text
preview the Dagster UI shows where the metadata is listed. The PNG used to be the ``plot`` entry itself,
as a Markdown image with a ``data:`` URI: the UI renders Markdown in place only when it is shorter than
``INLINE_MAX`` characters (a PNG is tens of thousands), so it showed "[Show Markdown]", and the dialog
behind it drew nothing either (the UI's Markdown renderer drops ``data:`` URLs). The preview is
Markdown of a few hundred characters: sparklines of the series (Unicode blocks) or bars, with their
range and totals, in a code block so the columns align.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

#: Dagster's UI renders a Markdown metadata value in place when it is shorter than this (1.13: the
#: metadata entry's ``mdStr.length < 1e3``), behind a "[Show Markdown]" button otherwise.
INLINE_MAX = 1000
#: Characters of a sparkline (one per time bucket) and of the longest bar.
WIDTH = 40
BARS = "▁▂▃▄▅▆▇█"
#: Series (lines) and bars shown in the preview at most; the PNG has them all.
MAX_ROWS = 8


@dataclass(frozen=True)
class Plot:
    """A drawn plot: the PNG and its Markdown preview (at most ``INLINE_MAX`` characters)."""

    png: bytes
    preview: str


def plot_metadata(plot: Plot, path: Path) -> dict[str, Any]:
    """Write the PNG to ``path``; the materialization's ``plot`` (the preview, shown in place) and
    ``plot_path`` (the PNG) entries."""
    from dagster import MetadataValue

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(plot.png)
    return {"plot": MetadataValue.md(plot.preview), "plot_path": MetadataValue.path(str(path))}


def _figure() -> tuple[Any, Any]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3), dpi=80)
    return fig, ax


def _png(fig: Any) -> bytes:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()


def _number(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.2f}".rstrip("0").rstrip(".")


def _label(x: Any) -> str:
    if isinstance(x, datetime):
        return x.strftime("%Y-%m-%d %H:%M")
    return str(x)


def sparkline(values: Sequence[float], low: float | None = None, high: float | None = None) -> str:
    """One block character per value, from ▁ (``low``, default the smallest) to █ (``high``, default the
    largest): series drawn on one scale pass the same bounds."""
    if not values:
        return ""
    low = min(values) if low is None else low
    high = max(values) if high is None else high
    if high == low:
        return BARS[-1 if high else 0] * len(values)
    return "".join(BARS[round((v - low) / (high - low) * (len(BARS) - 1))] for v in values)


def _step(first: Any, last: Any, width: int) -> str:
    """How much of the x range one sparkline character covers, in words."""
    if width <= 1 or last == first:
        return "the whole range"
    step = (last - first) / width
    seconds = getattr(step, "total_seconds", None)
    if seconds is None:
        return f"1/{width} of the range"
    minutes = seconds() / 60
    return f"{minutes / 60:.1f} h" if minutes >= 90 else f"{minutes:.0f} min"


def _buckets(points: Sequence[tuple[Any, float]], first: Any, last: Any, width: int) -> list[float]:
    """``points`` summed into ``width`` equal buckets of the x range ``first``..``last``."""
    sums = [0.0] * width
    span = (last - first) if last != first else None
    for x, y in points:
        i = 0 if span is None else min(width - 1, int((x - first) / span * width))
        sums[i] += y
    return sums


def _preview(title: str, lines: list[str]) -> str:
    """The Markdown preview, rows dropped from the end until it fits ``INLINE_MAX``."""
    shown = list(lines)
    while True:
        text = f"**{title}**\n\n```\n" + "\n".join(shown) + "\n```"
        if len(text) < INLINE_MAX or not shown:
            return text
        shown.pop()


def line_plot(series: Mapping[str, Sequence[tuple[Any, float]]], title: str, ylabel: str) -> Plot:
    fig, ax = _figure()
    for name, points in series.items():
        if points:
            xs, ys = zip(*points, strict=True)
            ax.plot(xs, ys, label=name, linewidth=1)
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    if len(series) > 1:
        ax.legend(fontsize=7, ncol=3)
    fig.autofmt_xdate()
    png = _png(fig)

    xs_all = [x for points in series.values() for x, _ in points]
    if not xs_all:
        return Plot(png, _preview(title, ["(no data)"]))
    first, last = min(xs_all), max(xs_all)
    rows = list(series.items())[:MAX_ROWS]
    name_width = max(len(str(name)) for name, _ in rows)
    width = min(WIDTH, len(set(xs_all)))
    buckets = {name: _buckets(points, first, last, width) for name, points in rows}
    low = min(min(b) for b in buckets.values())
    high = max(max(b) for b in buckets.values())
    step = _step(first, last, width)
    lines = [
        f"{_label(first)} → {_label(last)}",
        f"one character: the {ylabel} of {step}, ▁ {_number(low)} .. █ {_number(high)}",
    ]
    for name, points in rows:
        total = sum(y for _, y in points)
        line = sparkline(buckets[name], low, high)  # one scale: the lines compare
        lines.append(f"{name!s:<{name_width}} {line} total {_number(total)}")
    return Plot(png, _preview(title, lines))


def histogram(values: Sequence[float], title: str, xlabel: str, bins: int = 30) -> Plot:
    fig, ax = _figure()
    ax.hist(values, bins=bins)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    png = _png(fig)
    if not values:
        return Plot(png, _preview(title, ["(no data)"]))
    low, high = min(values), max(values)
    counts = [0.0] * bins
    for v in values:
        counts[0 if high == low else min(bins - 1, int((v - low) / (high - low) * bins))] += 1
    ordered = sorted(values)
    median = ordered[len(ordered) // 2]
    lines = [
        f"{_number(low)} {xlabel} {sparkline(counts)} {_number(high)} {xlabel}",
        f"{len(values):,} values, median {_number(median)} {xlabel}",
    ]
    return Plot(png, _preview(title, lines))


def bar_plot(items: Mapping[str, float], title: str, ylabel: str) -> Plot:
    fig, ax = _figure()
    ax.bar(list(items), list(items.values()))
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    png = _png(fig)
    if not items:
        return Plot(png, _preview(title, ["(no data)"]))
    rows = list(items.items())[:MAX_ROWS]
    top = max((abs(v) for _, v in rows), default=0.0) or 1.0
    name_width = max(len(str(k)) for k, _ in rows)
    lines = [
        f"{k!s:<{name_width}} {'█' * max(1, round(abs(v) / top * WIDTH)):<{WIDTH}} {_number(v)}"
        for k, v in rows
    ]
    return Plot(png, _preview(f"{title} ({ylabel})", lines))
