"""docs/faithfulness.md's table is the one scripts/faithfulness_figures.py rendered from
tests/golden/faithfulness_figures.json; with -m slow (and the data at hand) a fresh replay of the released
gpt-4 programs must give those figures again."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from .blocks import load_script


def script():
    return load_script("faithfulness_figures")


def test_the_page_shows_the_recorded_figures():
    module = script()
    rows = json.loads(module.GOLDEN.read_text())
    assert [r["model"] for r in rows] == ["gpt-4", "text-davinci-003"]
    assert module.generated(module.PAGE.read_text(encoding="utf-8")) == module.render(rows), \
        "docs/faithfulness.md's table is not tests/golden/faithfulness_figures.json: run scripts/faithfulness_figures.py"
    for row in rows:  # the audit's 16 flawed gold programs left out of every figure
        assert row["problems"] == 204 and len(row["excluded"]) == 16 and row["totals"]["programs"] == 188


def test_a_changed_figure_fails():
    module = script()
    rows = json.loads(module.GOLDEN.read_text())
    page = module.PAGE.read_text(encoding="utf-8")
    rows[0]["totals"]["right_for_wrong_reason"] += 1
    assert module.generated(page) != module.render(rows)
    assert module.generated(module.write_page(page, rows)) == module.render(rows)


@pytest.mark.slow
def test_a_fresh_replay_gives_the_recorded_figures(tmp_path):
    data, datasets = os.environ.get("LOGICPIPE_DATA"), os.environ.get("LOGICPIPE_DATASETS")
    if not (data and datasets and (Path(datasets) / "folio-v0.0").is_dir()):
        pytest.skip("needs LOGICPIPE_DATA and LOGICPIPE_DATASETS")
    module = script()
    recorded = json.loads(module.GOLDEN.read_text())[0]
    fresh = module.figures("gpt-4", tmp_path, 2)
    assert fresh["excluded"] == recorded["excluded"] and fresh["totals"] == recorded["totals"]
