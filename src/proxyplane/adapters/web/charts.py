"""Inline SVG charts (no script, no external library): requests per time bucket, errors stacked on top."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from markupsafe import Markup, escape

WIDTH, HEIGHT, PAD_LEFT, PAD_BOTTOM, BUCKETS = 720, 180, 44, 22, 48


@dataclass
class Chart:
    svg: Markup
    total_requests: int
    total_errors: int
    total_bytes: int


def usage_chart(points: list[Any], start: datetime, end: datetime) -> Chart:
    span = max((end - start).total_seconds(), 60.0)
    requests = [0] * BUCKETS
    errors = [0] * BUCKETS
    total_bytes = 0
    for p in points:
        i = int((p.minute - start).total_seconds() / span * BUCKETS)
        if 0 <= i < BUCKETS:
            requests[i] += p.requests
            errors[i] += p.errors
        total_bytes += p.bytes_total
    top = max(max(requests), 1)
    plot_w, plot_h = WIDTH - PAD_LEFT - 4, HEIGHT - PAD_BOTTOM - 8
    bar_w = plot_w / BUCKETS
    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-label="Requests per {int(span / BUCKETS / 60)} minutes">',
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
