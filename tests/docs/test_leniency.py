"""docs/tasks.md's leniency tables are what scripts/leniency.py measures on Logic-LM's released programs
(parsing only, seconds); skipped where $LOGICPIPE_DATA is not set. A hand-edited or stale cell fails."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .blocks import load_script


def leniency():
    return load_script("leniency")


def released() -> Path:
    data = os.environ.get("LOGICPIPE_DATA")
    if not data or not (Path(data) / "programs").is_dir():
        pytest.skip("LOGICPIPE_DATA with Logic-LM's programs/ is not set")
    return Path(data)


def test_the_leniency_tables_are_the_released_programs_measured():
    module = leniency()
    page = module.PAGE.read_text(encoding="utf-8")
    assert module.generated(page) == module.render(module.measure(released())), \
        "docs/tasks.md's leniency tables are stale: run python scripts/leniency.py --write"


def test_a_changed_cell_fails():
    module = leniency()
    rows = module.measure(released())
    page = module.PAGE.read_text(encoding="utf-8")
    rows[4]["rules"]["FOLIO_dev_0"] = ["nested-quantifier"]  # one more FOLIO gpt-4 program needing a rule
    assert module.generated(page) != module.render(rows)
    assert module.generated(module.write_page(page, module.render(rows))) == module.render(rows)


def test_every_rule_of_every_parser_has_a_row():
    from logicpipe.solvers import solver_rules

    page = leniency().PAGE.read_text(encoding="utf-8")
    for solver in ("lp", "fol", "csp", "smt"):
        for rule in solver_rules(solver):
            assert f"| {solver} | `{rule}` |" in page, (solver, rule)


def test_the_logic_lm_comparison_sorts_each_program_by_the_three_readings():
    # Verdicts as scripts/logiclm_fol_check.py writes them, made up here for three FOLIO programs.
    module = leniency()
    rows = module.measure(released())
    folio = next(row for row in rows if row["dataset"] == "FOLIO" and row["model"] == "gpt-4")
    refused = next(iter(module._beyond(folio)))  # read by logicpipe, refused by --strict
    failed = folio["failed"][0]  # refused by logicpipe's parser
    clean = next(f"FOLIO_dev_{i}" for i in range(204) if f"FOLIO_dev_{i}" not in folio["rules"]
                 and f"FOLIO_dev_{i}" not in folio["failed"])
    verdicts = {f"FOLIO_dev_gpt-4.json:{refused}": False, f"FOLIO_dev_gpt-4.json:{failed}": "nltk: ValueError",
                f"FOLIO_dev_gpt-4.json:{clean}": True}
    assert module.compare(rows, verdicts) == {("reads", "refuses", "refuses"): 1, ("refuses", "refuses", "refuses"): 1,
                                              ("reads", "reads", "reads"): 1}
