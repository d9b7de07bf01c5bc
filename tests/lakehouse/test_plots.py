"""Issue 46 item 9: the gold plot was hidden behind "[Show Markdown]" in the Dagster UI (a base64 PNG in
Markdown: the UI draws Markdown in place only under 1,000 characters, and drops ``data:`` images). The
``plot`` entry is now a text preview of the figure that fits; the PNG is the file at ``plot_path``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from assets import plots

T0 = datetime(2026, 11, 26, tzinfo=UTC)


def test_line_plot_preview_fits_in_place_and_draws_the_series_on_one_scale(tmp_path: Path) -> None:
    # Eight products over three days of 5-minute windows: p-000 sells ten times what the others do,
    # and only in the second half.
    def revenue(i: int, k: int) -> float:
        return (10.0 if k >= 432 else 0.0) if i == 0 else 1.0

    windows = [T0 + timedelta(minutes=5 * k) for k in range(864)]
    series = {f"p-{i:03d}": [(t, revenue(i, k)) for k, t in enumerate(windows)] for i in range(8)}
    plot = plots.line_plot(series, "Revenue per 5 min (top products)", "revenue")
    assert plot.png.startswith(b"\x89PNG")
    assert len(plot.preview) < plots.INLINE_MAX
    lines = plot.preview.splitlines()
    assert lines[0] == "**Revenue per 5 min (top products)**"
    assert "2026-11-26 00:00 → 2026-11-28 23:55" in plot.preview
    rows = {line.split()[0]: line.split()[1] for line in lines if line.startswith("p-")}
    assert set(rows) == set(series)  # every series, none cut off
    # one scale: the big seller's second half is full blocks, the small ones never leave the bottom
    big = rows["p-000"]
    assert set(big[: len(big) // 2]) == {"▁"} and set(big[len(big) // 2 + 1 :]) == {"█"}
    assert all(set(rows[f"p-{i:03d}"]) <= {"▁", "▂"} for i in range(1, 8))
    assert "total 4,320" in plot.preview  # p-000: 432 windows x 10

    meta = plots.plot_metadata(plot, tmp_path / "gold" / "day_v3.png")
    assert meta["plot"].value == plot.preview  # Markdown the UI draws where the metadata is listed
    assert Path(meta["plot_path"].value).read_bytes() == plot.png


def test_histogram_and_bars_preview_their_numbers() -> None:
    hist = plots.histogram([1.0] * 90 + [30.0] * 10, "Session length", "minutes")
    assert len(hist.preview) < plots.INLINE_MAX
    # 90 sessions of 1 minute fill the first bin, 10 of 30 minutes a ninth of the last
    assert "1 minutes █▁" in hist.preview and "▁▂ 30 minutes" in hist.preview
    assert "100 values, median 1 minutes" in hist.preview

    bars = plots.bar_plot({"consumer": 1200.0, "smb": 600.0}, "Revenue by segment", "revenue")
    consumer, smb = (line for line in bars.preview.splitlines() if line.startswith(("consumer", "smb")))
    assert consumer.count("█") == plots.WIDTH and smb.count("█") == plots.WIDTH // 2
    assert consumer.endswith("1,200") and smb.endswith("600")


def test_a_preview_too_long_loses_rows_not_its_place() -> None:
    points = [(T0, 1.0), (T0 + timedelta(hours=1), 2.0)]
    names = {f"a-very-long-product-name-{i:03d}-" * 3: points for i in range(8)}
    plot = plots.line_plot(names, "Revenue", "revenue")
    assert len(plot.preview) < plots.INLINE_MAX and plot.preview.endswith("```")
