"""The inline SVG charts keep every label inside the chart: each legend text, measured in DejaVu Sans
(a wide sans-serif), ends inside the SVG's width and above its bottom."""

import re

import pytest

from logicpipe.core.records import ErrorCategory
from logicpipe.report.viewer.charts import failure_chart, rate_chart

ImageFont = pytest.importorskip("PIL.ImageFont")
font_manager = pytest.importorskip("matplotlib.font_manager")


def legend_overflow(svg: str) -> list[str]:
    """The legend entries (and their right edges) that end outside the chart."""
    font = ImageFont.truetype(font_manager.findfont("DejaVu Sans"), 12)
    width, height = (float(v) for v in re.search(r'<svg[^>]* width="([\d.]+)" height="([\d.]+)"', svg).groups())
    entries = re.findall(r'<text x="([\d.]+)" y="([\d.]+)" class="legend">([^<]+)</text>', svg)
    assert entries
    return [f"{name}: {float(x) + font.getlength(name):.0f} > {width:g}" for x, y, name in entries
            if float(x) + font.getlength(name) > width or float(y) > height]


def test_every_failure_category_is_labelled_inside_the_chart():
    # FOLIO's failures in the released programs: every category a run can have, five datasets of them.
    every = {category.value: 3.0 for category in ErrorCategory}
    datasets = [{"key": key, "metrics": {"failures": every}} for key in ("folio", "prontoqa", "ar-lsat")]
    svg = failure_chart(datasets)
    assert legend_overflow(svg) == []
    assert svg.count('class="legend"') == len(ErrorCategory)


def test_rate_chart_legend_stays_on_one_line():
    svg = rate_chart([{"key": "folio", "metrics": {"exe_rate": 80.0, "exe_acc": 70.0, "accuracy": 60.0}}])
    assert legend_overflow(svg) == []
    assert len(set(re.findall(r'y="([\d.]+)" class="legend"', svg))) == 1
