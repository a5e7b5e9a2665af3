"""Rich rendering for the CLI: the final table and explanations. The library itself never prints."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from ..core.records import SolveRecord
from ..solvers.lp import goal_tree_lines


def render_summary(console: Console, metrics: dict, stages: list) -> None:
    table = Table(title=f"{metrics['dataset']} ({metrics['split']}, {metrics['source']})")
    for column in ("total", "executed", "Exe_Rate", "Exe_Acc", f"accuracy ({metrics['backup']} backup)"):
        table.add_column(column, justify="right")
    table.add_row(str(metrics["total"]), str(metrics["executed"]), f"{metrics['exe_rate']:.2f}%",
                  f"{metrics['exe_acc']:.2f}%", f"{metrics['accuracy']:.2f}%")
    console.print(table)
    if metrics["failures"]:
        failures = Table(title="failures by category")
        failures.add_column("category")
        failures.add_column("count", justify="right")
        for category, count in metrics["failures"].items():
            failures.add_row(category, str(count))
        console.print(failures)
    timing = Table(title="stages")
    for column in ("stage", "records", "new", "seconds"):
        timing.add_column(column, justify="right" if column != "stage" else "left")
    for stage in stages:
        timing.add_row(stage.name, str(stage.total), str(stage.new), f"{stage.seconds:.2f}")
    console.print(timing)


def render_explanation(console: Console, record: SolveRecord) -> None:
    title = f"{record.id}: verdict {record.verdict}" if record.verdict else f"{record.id}: no verdict"
    if record.error:
        title += f" ({record.error.category.value}: {record.error.message})"
    explanation = record.explanation or {}
    if "goal_tree" in explanation:
        tree = Tree(title)
        branches = [tree]
        for depth, text in goal_tree_lines(explanation):
            del branches[depth + 1:]
            branches.append(branches[depth].add(Text(text)))
        console.print(tree)
    elif "proof" in explanation:
        console.print(title)
        console.print(explanation["proof"], markup=False, highlight=False)
    else:
        console.print(title)
        if explanation:
            console.print(explanation, markup=False)
        else:
            console.print("no explanation stored for this record")
