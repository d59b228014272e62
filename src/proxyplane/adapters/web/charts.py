"""Inline SVG charts (no script, no external library): requests per time bucket, errors stacked on top.

Each window of the dashboard's usage chart is drawn as bars aligned on UTC boundaries (bar edges at
whole minutes, hours or 4-hour marks from UTC midnight), read from the series resolution that fits the
bar: 1 h = 60 one-minute bars (minutes), 24 h = 24 hourly bars and 7 d = 42 bars of 4 h (hourly
rollups, so a 7-day chart reads ~168 hour buckets, not ~10,000 minutes). A bar holds whole series
points only, so the bars' sums equal the usage totals over the same aligned window."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from markupsafe import Markup, escape

WIDTH, HEIGHT, PAD_LEFT, PAD_BOTTOM = 720, 180, 44, 22


@dataclass(frozen=True)
class Window:
    length: timedelta
    bar: timedelta  # divides a UTC day, so bars start on the same marks every day
    resolution: str  # get_usage_series resolution whose buckets fit whole into a bar

    def bounds(self, now: datetime) -> tuple[datetime, datetime]:
        """[start, end) ending at the bar boundary after `now` (the current bar included)."""
        midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
        end = midnight + ((now - midnight) // self.bar + 1) * self.bar
        return end - self.length, end


WINDOWS = {
    "1h": Window(timedelta(hours=1), timedelta(minutes=1), "minute"),
    "24h": Window(timedelta(hours=24), timedelta(hours=1), "hour"),
    "7d": Window(timedelta(days=7), timedelta(hours=4), "hour"),
}


@dataclass
class Chart:
    svg: Markup
    total_requests: int
    total_errors: int
    total_bytes: int


def _per(bar: timedelta) -> str:
    minutes = int(bar.total_seconds() // 60)
    if minutes % 60:
        return "minute" if minutes == 1 else f"{minutes} minutes"
    return "hour" if minutes == 60 else f"{minutes // 60} hours"


def usage_chart(points: list[Any], start: datetime, end: datetime, bar: timedelta) -> Chart:
    """Bars of length `bar` over [start, end) (start on a bar boundary); each point (at its bucket's
    start, `.minute`) goes whole into the bar holding that start."""
    count = max(int((end - start) / bar), 1)
    requests = [0] * count
    errors = [0] * count
    total_bytes = 0
    for p in points:
        i = (p.minute - start) // bar
        if 0 <= i < count:
            requests[i] += p.requests
            errors[i] += p.errors
            total_bytes += p.bytes_total
    top = max(max(requests), 1)
    plot_w, plot_h = WIDTH - PAD_LEFT - 4, HEIGHT - PAD_BOTTOM - 8
    bar_w = plot_w / count
    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-label="Requests per {_per(bar)}">',
        f'<line x1="{PAD_LEFT}" y1="{8 + plot_h}" x2="{WIDTH - 4}" y2="{8 + plot_h}" stroke="#d0d7de"/>',
        f'<line x1="{PAD_LEFT}" y1="8" x2="{WIDTH - 4}" y2="8" stroke="#eef1f4"/>',
        f'<text x="{PAD_LEFT - 6}" y="14" text-anchor="end">{top}</text>',
        f'<text x="{PAD_LEFT - 6}" y="{8 + plot_h}" text-anchor="end">0</text>',
    ]
    for i, (req, err) in enumerate(zip(requests, errors, strict=True)):
        if not req and not err:
            continue
        x = PAD_LEFT + i * bar_w + 1
        h = max(req / top * plot_h, 1.5)
        eh = min(err / top * plot_h, h)
        parts.append(
            f'<rect x="{x:.1f}" y="{8 + plot_h - h:.1f}" width="{bar_w - 2:.1f}" height="{h:.1f}" '
            f'fill="#2c5cc5" rx="1.5"><title>{req} requests, {err} errors</title></rect>'
        )
        if eh > 0:
            parts.append(
                f'<rect x="{x:.1f}" y="{8 + plot_h - eh:.1f}" width="{bar_w - 2:.1f}" '
                f'height="{eh:.1f}" fill="#d1453b"/>'
            )
    for frac, anchor in ((0.0, "start"), (0.5, "middle"), (1.0, "end")):
        label = (start + (end - start) * frac).strftime("%m-%d %H:%M")
        x = PAD_LEFT + plot_w * frac
        parts.append(f'<text x="{x:.0f}" y="{HEIGHT - 6}" text-anchor="{anchor}">{escape(label)}</text>')
    parts.append("</svg>")
    return Chart(Markup("".join(parts)), sum(requests), sum(errors), total_bytes)
