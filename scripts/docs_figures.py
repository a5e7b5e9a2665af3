"""Write docs/reproduce.md's three tables from what `make reproduce` wrote (results/table3.json,
results/table2.json and results/logicbench.json), and keep those figures in
tests/golden/reproduce_figures.json, which the tests hold the page to (tests/docs/test_figures.py) and a
replay to (tests/report/test_reproduce.py: the LogicBench table in every run, Table 3 and 2 with -m
slow). A figure in the page can then only be one a replay gave.

usage: python scripts/docs_figures.py [--results results]   (after `make reproduce`)
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "reproduce.md"
GOLDEN = ROOT / "tests" / "golden" / "reproduce_figures.json"
NAMES = {"prontoqa": "ProntoQA", "proofwriter": "ProofWriter", "folio": "FOLIO",
         "logicaldeduction": "LogicalDeduction", "ar-lsat": "AR-LSAT"}
MODELS = ("gpt-4", "text-davinci-003")
# Cells the page explains under "Why the large differences": bold where they differ from the paper by
# 10 points or more.
EXPLAINED = {("proofwriter", "exe_rate"), ("proofwriter", "exe_acc"), ("folio", "exe_rate")}
KEPT3 = ("total", "exe_rate_logiclm", "exe_rate_logiclm_ci", "paper_exe_rate", "executed_logiclm", "exe_acc_logiclm",
         "exe_acc_logiclm_ci", "paper_exe_acc", "exe_rate", "exe_rate_ci", "executed", "exe_acc", "exe_acc_ci")
KEPT2 = ("logic_lm", "logic_lm_ci", "n", "paper_logic_lm")
KEPT_LB = ("task", "logic", "formalism", "programs", "patterns", "questions", "with_program", "no_program", "executed",
           "correct", "exe_rate", "exe_rate_ci", "exe_acc", "exe_acc_ci")


def figures(results: Path) -> dict:
    """The figures the page shows, from the table files a reproduce run wrote."""
    table3 = json.loads((results / "table3.json").read_text())
    table2 = json.loads((results / "table2.json").read_text())
    logicbench = json.loads((results / "logicbench.json").read_text())
    return {"table3": [{"dataset": r["dataset"], "model": r["model"], **{k: r[k] for k in KEPT3}} for r in table3],
            "table2": [{"dataset": r["dataset"], "model": r["model"], **{k: r[k] for k in KEPT2}} for r in table2],
            "logicbench": [{k: r[k] for k in KEPT_LB} for r in logicbench]}


def _rate(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"  # undefined (nothing executed), never 0


def _cell(row: dict, ours: str, paper: str, column: str, n: str | None = None) -> str:
    text = _rate(row[ours])
    if row[ours] is not None and (row["dataset"], column) in EXPLAINED and abs(row[ours] - row[paper]) >= 10:
        text = f"**{text}**"
    return text + _interval(row, ours, n)


def _interval(row: dict, key: str, n: str | None = None) -> str:
    """The figure's 95% interval, and its n where that is not the row's total; `–` when undefined."""
    interval = row.get(f"{key}_ci")
    shown = f" [{interval[0]:.1f}, {interval[1]:.1f}]" if interval else " [–]"
    return shown + (f" (n={row[n]})" if n else "")


def render3(rows: list[dict]) -> str:
    lines = ["| dataset | model | total | Exe_Rate | paper | Exe_Acc | paper | own Exe_Rate | own Exe_Acc |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        lines.append(f"| {NAMES[row['dataset']]} | {row['model']} | {row['total']} | "
                     f"{_cell(row, 'exe_rate_logiclm', 'paper_exe_rate', 'exe_rate')} | {row['paper_exe_rate']:.1f} | "
                     f"{_cell(row, 'exe_acc_logiclm', 'paper_exe_acc', 'exe_acc', 'executed_logiclm')} | "
                     f"{row['paper_exe_acc']:.1f} | {_rate(row['exe_rate'])}{_interval(row, 'exe_rate')} | "
                     f"{_rate(row['exe_acc'])}{_interval(row, 'exe_acc', 'executed')} |")
    return "\n".join(lines)


def render2(rows: list[dict]) -> str:
    by = {(r["dataset"], r["model"]): r for r in rows}
    lines = ["| dataset | gpt-4 | paper | text-davinci-003 | paper |", "|---|---|---|---|---|"]
    for dataset, name in NAMES.items():
        cells = [f"{by[(dataset, m)]['logic_lm']:.2f}{_interval(by[(dataset, m)], 'logic_lm')} | "
                 f"{by[(dataset, m)]['paper_logic_lm']:.2f}" for m in MODELS]
        lines.append(f"| {name} | {' | '.join(cells)} |")
    return "\n".join(lines)


def render_logicbench(rows: list[dict]) -> str:
    lines = ["| task | logic type | formalism | our programs | patterns | questions | with a program | no_program "
             "| executed | correct | Exe_Rate | Exe_Acc |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        lines.append(f"| {row['task']} | {row['logic']} | {row['formalism']} | `{row['programs']}` | {row['patterns']} | "
                     f"{row['questions']} | {row['with_program']} | {row['no_program']} | {row['executed']} | "
                     f"{row['correct']} | {_rate(row['exe_rate'])}{_interval(row, 'exe_rate')} | "
                     f"{_rate(row['exe_acc'])}{_interval(row, 'exe_acc')} |")
    return "\n".join(lines)


def _span(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- {name}: generated by scripts/docs_figures.py[^\n]*-->\n)(.*?)(\n<!-- /{name} -->)", re.S)


def generated(page: str, name: str) -> str:
    found = _span(name).search(page)
    if found is None:
        raise SystemExit(f"docs/reproduce.md has no generated {name} (<!-- {name}: generated by ... --> ... <!-- /{name} -->)")
    return found.group(2)


def write_page(page: str, numbers: dict) -> str:
    for name, render in (("table3", render3), ("table2", render2), ("logicbench", render_logicbench)):
        generated(page, name)
        page = _span(name).sub(lambda m, r=render(numbers[name]): m.group(1) + r + m.group(3), page)
    return page


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", type=Path, default=ROOT / "results",
                        help="where `logicpipe reproduce` wrote table3.json and table2.json (a full run, no --limit)")
    args = parser.parse_args()
    numbers = figures(args.results)
    if any(row["total"] < 200 for row in numbers["table3"]):
        raise SystemExit(f"{args.results} holds a --limit run; the page shows the full dev splits")
    GOLDEN.write_text(json.dumps(numbers, indent=1) + "\n")
    PAGE.write_text(write_page(PAGE.read_text(encoding="utf-8"), numbers), encoding="utf-8")
    print(f"wrote {GOLDEN.relative_to(ROOT)} and the tables of {PAGE.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
