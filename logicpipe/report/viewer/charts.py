"""Small inline SVG bar charts, generated here so the page needs no chart library."""

from __future__ import annotations

from html import escape

_COLOURS = ["#3b6ea8", "#e08a2e", "#4c9a5b", "#b84a4a", "#7d5ba6", "#8c6d46"]
_ROW = 22
_LABEL = 130
_BAR = 260
_CHAR = 8  # pixels a legend character may take at 12px: DejaVu Sans, a wide font, takes up to 7.3 for these names


def bars(title: str, groups: list[tuple[str, list[tuple[str, float]]]], scale: float | None = None,
         unit: str = "") -> str:
    """Horizontal bars, one row per (group, series) pair; `scale` is the value of a full bar
    (100 for percentages; default the largest value)."""
    series = list(dict.fromkeys(name for _, values in groups for name, _ in values))
    colour = {name: _COLOURS[i % len(_COLOURS)] for i, name in enumerate(series)}
    top = scale or max((v for _, values in groups for _, v in values), default=0) or 1
    rows: list[str] = []
    y = 28
    for group, values in groups:
        rows.append(f'<text x="0" y="{y + 14}" class="group">{escape(group)}</text>')
        for name, value in values:
            width = max(0.0, min(1.0, value / top)) * _BAR
            rows.append(
                f'<rect x="{_LABEL}" y="{y + 3}" width="{width:.1f}" height="{_ROW - 6}" fill="{colour[name]}">'
                f'<title>{escape(group)} {escape(name)}: {value:g}{unit}</title></rect>'
                f'<text x="{_LABEL + width + 4:.1f}" y="{y + 15}" class="value">{value:g}{unit}</text>')
            y += _ROW
        y += 6
    width = _LABEL + _BAR + 60
    legend = []
    x = _LABEL
    for name in series:
        item = 24 + _CHAR * len(name)  # swatch, gap, text, space before the next
        if x > _LABEL and x + item - 10 > width:  # the legend wraps inside the chart rather than run past it
            x, y = _LABEL, y + _ROW - 4
        legend.append(f'<rect x="{x}" y="{y + 4}" width="10" height="10" fill="{colour[name]}"/>'
                      f'<text x="{x + 14}" y="{y + 13}" class="legend">{escape(name)}</text>')
        x += item
    height = y + 22
    return (f'<svg class="chart" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">'
            f'<text x="0" y="16" class="title">{escape(title)}</text>{"".join(rows)}{"".join(legend)}</svg>')


def rate_chart(datasets: list[dict]) -> str:
    groups = []
    for entry in datasets:
        metrics = entry["metrics"]
        values = [(label, float(metrics[key])) for label, key in
                  (("Exe_Rate", "exe_rate"), ("Exe_Acc", "exe_acc"), ("accuracy", "accuracy"))
                  if isinstance(metrics.get(key), (int, float))]
        if values:
            groups.append((entry["key"], values))
    return bars("execution rate and accuracy (%)", groups, scale=100, unit="%") if groups else ""


def failure_chart(datasets: list[dict]) -> str:
    groups = []
    for entry in datasets:
        failures = entry["metrics"].get("failures")
        if isinstance(failures, dict):
            values = [(str(k), float(v)) for k, v in failures.items() if isinstance(v, (int, float))]
            if values:
                groups.append((entry["key"], values))
    return bars("failures by category (problems)", groups) if groups else ""
