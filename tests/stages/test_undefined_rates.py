"""Undefined is not zero: a rate with an empty denominator (Exe_Acc when no program executed) is null in
metrics.json and `–` in every table that shows it: the summary, compare's table, reproduce's tables,
the viewer's metrics."""

import json

from logicpipe.report.compare import markdown, read_row
from logicpipe.report.reproduce import write_table
from tests.conftest import ROOT, cli
from tests.report.viewer.pages import payload

FILES = ROOT / "tests" / "data" / "files"


def test_exe_acc_of_a_run_where_nothing_executed_is_null_and_shown_as_a_dash(tmp_path):
    programs = tmp_path / "unreadable.json"
    released = json.loads((FILES / "cats_programs.json").read_text())
    programs.write_text(json.dumps([{"id": r["id"], "raw_logic_programs": ["not a program"]} for r in released]))
    done = cli("run", "--task", str(FILES / "cats.yaml"), "--programs", str(programs), "--out", str(tmp_path / "run"),
               env={"COLUMNS": "200"})
    assert done.returncode == 0, done.stderr
    folder = tmp_path / "run" / "cats"
    metrics = json.loads((folder / "metrics.json").read_text())
    assert (metrics["executed"], metrics["exe_rate"]) == (0, 0.0)  # a rate over 4 problems: 0 is its value
    assert metrics["exe_acc"] is None and metrics["exe_acc_logiclm"] is None
    summary = next(line for line in done.stdout.splitlines() if "0.00%" in line)
    assert summary.split("│")[4].strip() == "– (n=0)"  # the Exe_Acc column: undefined, with its n
    # compare's table (read back from a formalism's folder, as compare does)
    assert markdown([read_row("lp", folder)], "cats").splitlines()[2] == \
        "| lp | 4 | 0.0 | 0.0 [0.0, 49.0] | – (n=0) | 75.0 [30.1, 95.4] |"
    # reproduce's tables
    write_table([{"dataset": "cats", "exe_acc": metrics["exe_acc"]}], tmp_path / "t", "t")
    assert (tmp_path / "t.md").read_text().splitlines()[-1] == "| cats | – |"
    assert json.loads((tmp_path / "t.json").read_text()) == [{"dataset": "cats", "exe_acc": None}]
    # the viewer's metrics table: the Exe_Acc cell is a dash, and no 0.00 bar is drawn for it
    page = tmp_path / "page.html"
    assert cli("view", str(tmp_path / "run"), "--out", str(page)).returncode == 0
    html = page.read_text()
    assert ('<td>cats</td><td>4</td><td>0</td><td>0.00 <span class="ci">[0.00, 48.99]</span> <span class="n">n=4</span>'
            '</td><td>–</td><td>75.00') in html
    assert "cats Exe_Acc" not in html and payload(html)["problems"]
