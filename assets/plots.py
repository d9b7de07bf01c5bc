"""Small PNG plots for gold materializations (what a person would rather look at than read)."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import Any


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


def line_plot(series: Mapping[str, Sequence[tuple[Any, float]]], title: str, ylabel: str) -> bytes:
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
    return _png(fig)


def histogram(values: Sequence[float], title: str, xlabel: str, bins: int = 30) -> bytes:
    fig, ax = _figure()
    ax.hist(values, bins=bins)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    return _png(fig)


def bar_plot(items: Mapping[str, float], title: str, ylabel: str) -> bytes:
    fig, ax = _figure()
    ax.bar(list(items), list(items.values()))
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    return _png(fig)
