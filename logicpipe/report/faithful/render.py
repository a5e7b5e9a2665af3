"""The faithfulness report as tables (the CLI prints them; the library itself never prints)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from .report import Report

_ROWS = (("premise recall", "premise_recall", "gold premises the model's premises entail"),
         ("premise precision", "premise_precision", "model premises the gold premises entail"),
         ("conclusion equivalent", "conclusion_equivalent", "conclusions that entail each other"),
         ("formulas equivalent", "formulas_equivalent", "premises paired by sentence that are equivalent"),
         ("translation equivalent", "translation_equivalent", "all of the above, per program"))


def _cell(value: Any) -> str:
    return "–" if value is None else f"{value:.1f}" if isinstance(value, float) else str(value)


def totals_table(totals: dict[str, Any], title: str) -> Table:
    table = Table("figure", "%", "yes", "no", "unknown", "what", title=title)
    for name, key, what in _ROWS:
        row = totals[key]
        table.add_row(name, _cell(row["rate"]), str(row["yes"]), str(row["no"]), str(row["unknown"]), what)
    return table


def render_faithfulness(console: Console, report: Report, problems: bool = False) -> None:
    t = report.totals
    console.print(totals_table(t, f"{report.dataset}: {t['scored']} of {t['programs']} programs scored "
                                  f"against gold formulas ({report.problems} problems, "
                                  f"{len(report.excluded)} with flawed gold left out)"))
    console.print(f"right answer, translation not equivalent (right for the wrong reason): "
                  f"{t['right_for_wrong_reason']}; wrong answer, translation equivalent: {t['wrong_despite_equivalent']}; "
                  f"right answer, equivalence unknown: {t['right_translation_unknown']}", markup=False)
    le = "–" if t["le"] is None else f"{t['le']:.3f}"
    bleu = "–" if t["bleu"] is None else f"{t['bleu']:.3f}"
    console.print(f"LogicLLaMA's LE {le} (n={t['le_n']}) and BLEU {bleu} (n={t['bleu_n']}) per paired formula; "
                  f"LE 1 but not equivalent: {t['le_1_not_equivalent']}; equivalent but LE below 1: "
                  f"{t['le_below_1_equivalent']}", markup=False)
    if t["not_scored"]:
        console.print("not scored: " + ", ".join(f"{n} {why}" for why, n in t["not_scored"].items()), markup=False)
    if report.samples_totals is not None:
        console.print(totals_table(report.samples_totals, "every sample (the table above: the voted ones)"))
    if report.excluded:
        excluded = Table("id", "gold flaw", "why", title="left out: gold programs that cannot be trusted")
        for item in report.excluded:
            excluded.add_row(item.id, item.kind.replace("_", " "), item.reason)
        console.print(excluded)
    if problems:
        table = Table("id", "sample", "equivalent", "recall", "precision", "conclusion", "mistranslated",
                      title="per program")
        for row in report.rows:
            result = row.result
            if result.get("error"):
                table.add_row(row.id, str(row.sample), "–", "–", "–", "–", result["error"])
                continue
            wrong = [f"{f['sentence']!r}: {f['model_formula']} vs {f['gold_formula']} ({f['how']})"
                     for f in result["formulas"] if f["equivalent"] != "yes"]
            table.add_row(row.id, str(row.sample) + ("*" if row.voted else ""), result["equivalent"],
                          f"{result['recall'].count('yes')}/{len(result['recall'])}",
                          f"{result['precision'].count('yes')}/{len(result['precision'])}",
                          result["conclusion"], "\n".join(wrong))
        console.print(table)
