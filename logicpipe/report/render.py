"""Rich rendering for the CLI: the final table and explanations. The library itself never prints."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..core.records import InterpretRecord, SolveRecord
from ..core.words import counted

if TYPE_CHECKING:  # what an explanation needs is loaded with it: a run's summary needs none of it
    from .explain import Explained


def percent(value: float | None) -> str:
    """A rate as a table shows it: `–` where it is undefined (an empty denominator), never 0."""
    return "–" if value is None else f"{value:.2f}%"


def render_summary(console: Console, metrics: dict, stages: list) -> None:
    table = Table(title=f"{metrics['dataset']} ({metrics['split']}, {metrics['source']})")
    for column in ("total", "executed", "Exe_Rate", "Exe_Acc", f"accuracy ({metrics['backup']} backup)"):
        table.add_column(column, justify="right")
    table.add_row(str(metrics["total"]), str(metrics["executed"]), *_rates(metrics))
    console.print(table)
    _plain(console, _INTERVALS)
    _spending(console, metrics)
    _gold(console, metrics)
    _groups(console, metrics)
    _failures(console, metrics, "failures by category")
    _lenient(console, metrics)
    _stages(console, stages)


def money(value: float | None) -> str:
    return "–" if value is None else f"${value:.6g}" if value < 1 else f"${value:,.2f}"


def spending_line(metrics: dict) -> str | None:
    """The tokens the run's model calls used and, with prices, what they cost: in total, per problem and
    per correct answer (`–` where nothing was counted); None for a run that asked no model."""
    tokens = metrics.get("tokens")
    if not isinstance(tokens, dict):
        return None
    used = (f"tokens: {tokens.get('prompt_tokens', 0):,} prompt + {tokens.get('completion_tokens', 0):,} completion "
            f"in {tokens.get('calls', 0):,} calls ({tokens.get('cached_calls', 0):,} from the reply cache)")
    if "cost" not in metrics:
        return used + "; cost: unknown (give --price-prompt and --price-completion)"
    batch = f", {money(metrics['batch_cost'])} at the batch price" if "batch_cost" in metrics else ""
    return (used + f"; cost: {money(metrics['cost'])}{batch}, {money(metrics.get('cost_per_problem'))} per problem, "
            f"{money(metrics.get('cost_per_correct'))} per correct answer")


def _spending(console: Console, metrics: dict) -> None:
    line = spending_line(metrics)
    if line is not None:
        _plain(console, line)


def _gold(console: Console, metrics: dict) -> None:
    """A task with gold programs: how far the run's verdicts agree with theirs (metrics.json's gold_agreement)."""
    held = metrics.get("gold_agreement")
    if not isinstance(held, dict):
        return
    if "error" in held:
        _plain(console, f"gold programs: {held['error']}")
        return
    rate = "–" if held.get("rate") is None else f"{held['rate']:.2f}%"
    line = (f"gold programs: the run's verdict agrees with the gold program's on {held.get('agree')} of "
            f"{held.get('compared')} problems where both proved an option ({rate})")
    premises = held.get("premises")
    if isinstance(premises, dict) and premises.get("checked"):
        line += (f"; the run's premises give the label for the gold conclusion on {premises.get('give_label')} of "
                 f"{premises.get('checked')} checked")
    _plain(console, line)


def _lenient(console: Console, metrics: dict) -> None:
    """How many executed programs needed each named leniency (docs/tasks.md), beside Logic-LM's grammar."""
    lenient = metrics.get("lenient") or {}
    if not lenient.get("programs"):
        return
    console.print(f"lenient: {lenient['programs']} executed programs needed a named rule, {lenient['beyond_logic_lm']} "
                  f"one Logic-LM's code does not read so (--strict refuses those)", markup=False, highlight=False)
    table = Table(title="lenient rules")
    table.add_column("rule")
    table.add_column("programs", justify="right")
    for rule, count in lenient["rules"].items():
        table.add_row(rule, str(count))
    console.print(table)


_INTERVALS = "[ ]: 95% interval (Wilson; Exe_Acc: bootstrap); n: the problems the rate is of"


def rate(metrics: dict, key: str, n: int | None) -> str:
    """A rate with its 95% interval (metrics' `<key>_ci`) and its n; `–` when undefined (n = 0), never 0."""
    value = metrics.get(key)
    if value is None or not n:
        return f"– (n={n or 0})"
    interval = metrics.get(f"{key}_ci")
    shown = f" [{interval[0]:.1f}, {interval[1]:.1f}]" if interval else ""
    return f"{value:.2f}%{shown} (n={n})"


def _rates(metrics: dict) -> tuple[str, str, str]:
    """Exe_Rate, Exe_Acc and accuracy of a run or a group, each with its interval and n."""
    return (rate(metrics, "exe_rate", metrics["total"]), rate(metrics, "exe_acc", metrics["executed"]),
            rate(metrics, "accuracy", metrics["total"]))


def _groups(console: Console, metrics: dict) -> None:
    """LogicBench's figures per logic type, then per pattern."""
    for key, title in (("by_logic", "by logic type"), ("by_pattern", "by pattern")):
        if not metrics.get(key):
            continue
        table = Table(title=title)
        table.add_column(title.removeprefix("by "))
        for column in ("total", "executed", "Exe_Rate", "Exe_Acc", "accuracy"):
            table.add_column(column, justify="right")
        for name, row in metrics[key].items():
            table.add_row(name, str(row["total"]), str(row["executed"]), *_rates(row))
        console.print(table)


def _failures(console: Console, metrics: dict, title: str) -> None:
    if metrics["failures"]:
        failures = Table(title=title)
        failures.add_column("category")
        failures.add_column("count", justify="right")
        for category, count in metrics["failures"].items():
            failures.add_row(category, str(count))
        console.print(failures)


def _stages(console: Console, stages: list) -> None:
    timing = Table(title="stages")
    for column in ("stage", "records", "new", "seconds"):
        timing.add_column(column, justify="right" if column != "stage" else "left")
    for stage in stages:
        timing.add_row(stage.name, str(stage.total), str(stage.new), f"{stage.seconds:.2f}")
    console.print(timing)


# Which backup gave the answer of a problem whose program did not execute (EvaluateRecord.backup).
_BACKUP_WORDS = {
    "cot": "backup answer: the chain-of-thought backup, as the program did not execute",
    "random": "backup answer: a random letter, as the program did not execute",
    "cot, then random": "backup answer: a random letter, as the program did not execute and the "
                        "chain-of-thought backup gave no answer",
}
_NO_BACKUP = "no answer: the program did not execute and no backup was used"
_UNNAMED = "backup answer: the program did not execute"  # records written before backups were named


def render_baseline_summary(console: Console, metrics: dict, stages: list, mode: str) -> None:
    """A baseline's figures in its own words: the model answers directly, so there is no program to
    execute and no backup; what counts is how many replies named an option, and how many were right."""
    label = {"standard": "Standard", "cot": "chain-of-thought", "chain": "chain of prompted steps"}.get(mode, mode)
    table = Table(title=f"{metrics['dataset']} ({metrics['split']}, {label} baseline, {metrics['source']})")
    for column in ("total", "answered", "answered %", "correct", "accuracy"):
        table.add_column(column, justify="right")
    table.add_row(str(metrics["total"]), str(metrics["executed"]), rate(metrics, "exe_rate", metrics["total"]),
                  str(metrics["correct"]), rate(metrics, "accuracy", metrics["total"]))
    console.print(table)
    _spending(console, metrics)
    _failures(console, metrics, "replies without an answer")
    _stages(console, stages)


def render_explanation(console: Console, explained: Explained) -> None:
    record, problem, scored = explained.solve, explained.problem, explained.evaluated
    if record is None and explained.steps:  # a chain of prompted steps
        first = explained.steps[0]
        console.print(f"{first.id} (a chain of {counted(len(explained.steps), 'step')}: "
                      f"{', '.join(step.step for step in explained.steps)})", markup=False, highlight=False)
    elif record is None:  # a baseline
        answer = explained.interpreted
        assert answer is not None  # explain finds a problem by its solve records or its baseline answer
        console.print(f"{answer.id} (answered directly by the model: no program, no solver)", markup=False,
                      highlight=False)
    else:
        console.print(f"{record.id} ({record.dataset}, solver {record.solver})", markup=False, highlight=False)
    if problem is not None:
        if problem.context:  # the premises the program was written from
            _plain(console, "context:")
            for line in problem.context.strip().splitlines():
                _plain(console, f"  {line}")
        _plain(console, f"question: {problem.question}")
        for option in problem.options:
            _plain(console, f"  {option}")
    else:
        _plain(console, f"question: not available: {explained.missing}")
    if scored is not None:
        how = ""
        if not scored.executed:
            fallback = _NO_BACKUP if scored.final is None else _UNNAMED
            how = f" ({_BACKUP_WORDS.get(scored.backup or '', fallback)})"
        _plain(console, f"gold: {scored.gold}   predicted: {scored.final}{how}   "
                        f"{'right' if scored.correct else 'wrong'}")
    else:
        _plain(console, "gold and prediction: not evaluated yet (run the evaluate stage)")
    if record is None:
        if explained.steps:
            _chain_lines(console, explained)
        else:
            for line in answer_lines(explained.interpreted):
                _plain(console, line)
        return
    which = round_line(explained)
    if which:
        _plain(console, which)
    for line in verdict_lines(record):
        _plain(console, line)
    explanation = record.explanation or {}
    if "goal_tree" in explanation:
        from rich.tree import Tree

        from ..solvers.lp import goal_tree_lines

        tree = Tree("derivation")
        branches = [tree]
        for depth, text in goal_tree_lines(explanation):
            del branches[depth + 1:]
            branches.append(branches[depth].add(Text(text)))  # Text: model-written names are never markup
        console.print(tree)
    elif "proof" in explanation:
        _plain(console, "proof:")
        _plain(console, explanation["proof"])
    for note in explanation.get("ignored", []):
        _plain(console, f"note: {note}")


def answer_lines(answer: InterpretRecord | None) -> list[str]:
    """A baseline's answer: with samples (self-consistency), each one's vote and the majority; why
    there is no answer where there is none."""
    if answer is None:
        return []
    lines = []
    if answer.votes:
        said = [vote.answer or (vote.error.category.value if vote.error else "none") for vote in answer.votes]
        counts = Counter(vote.answer for vote in answer.votes if vote.answer is not None)
        tally = ", ".join(f"{letter} {n}" for letter, n in counts.most_common())
        lines.append(f"votes of {len(said)} samples: {', '.join(said)} ({tally or 'no sample named an option'}; "
                     "the most common wins, ties to the first seen)")
        for number, vote in enumerate(answer.votes):
            if vote.error is not None:
                lines.append(f"  sample {number}: {vote.error.category.value}: {vote.error.message}")
    if answer.error is not None:
        lines.append(f"no answer: {answer.error.category.value}: {answer.error.message}")
    return lines


def _chain_lines(console: Console, explained: Explained) -> None:
    """Each step's reply (or why it has none), then why the chain has no answer if it has none."""
    for step in explained.steps:
        _plain(console, f"step {step.step} (prompt {step.prompt_id}):")
        if step.error is not None:
            _plain(console, f"  {step.error.category.value}: {step.error.message}")
        for line in (step.reply or "").strip().splitlines():
            _plain(console, f"  {line}")
    answer = explained.interpreted
    if answer is not None and answer.error is not None:
        _plain(console, f"no answer: {answer.error.category.value}: {answer.error.message}")


def round_line(explained: Explained) -> str:
    """Which refinement round is shown and whether it is the one that answered; nothing for a problem
    solved once and shown as such."""
    shown, answered, rounds = explained.round, explained.answered, explained.rounds
    if rounds == [0] and shown == answered:
        return ""
    line = f"round {shown} of rounds {', '.join(map(str, rounds))}: "
    if answered is None:
        line += "not interpreted yet"
    elif shown == answered:
        line += "the round that answered (--round N shows another)"
    else:
        line += f"not the round that answered (round {answered} did)"
    if not explained.stands:
        line += "; a revision that did not replace the program it revised"
    return line


def verdict_lines(record: SolveRecord) -> list[str]:
    """The solver's verdict in words: which query, which options held, how many solutions."""
    explanation = record.explanation or {}
    lines = [f"verdict: {record.verdict}" if record.verdict else "verdict: none"]
    if record.error:
        lines.append(f"{record.error.category.value}: {record.error.message}")
    if "query" in explanation:
        query = explanation["query"]
        lines.append({"True": f"query {query} is proved",
                      "False": f"query {query} is refuted: its negation is derived",
                      "Unknown": f"query {query}: neither it nor its negation is derived "
                                 f"from {explanation.get('derived_facts', 0)} facts"}.get(record.verdict or "",
                                                                                        f"query {query}"))
    if "attempts" in explanation:
        tried = ", ".join(f"{goal}: {status}" for goal, status in explanation["attempts"].items())
        lines.append(f"Prover9 attempts: {tried}")
        if explanation.get("proved") == "negation":
            lines.append("the negation of the conclusion is proved, so the conclusion is False")
        elif record.verdict == "Unknown":
            lines.append("neither the conclusion nor its negation is proved, so it is Unknown")
    if "options" in explanation:  # SMT: each option checked against the constraints
        held = [letter for letter, holds in explanation["options"].items() if holds]
        failed = [letter for letter, holds in explanation["options"].items() if not holds]
        lines.append(f"options that hold: {', '.join(held) or 'none'}; do not hold: {', '.join(failed) or 'none'}")
        if explanation.get("also_held"):
            lines.append(f"also held: {', '.join(explanation['also_held'])} "
                         f"(the first option that holds, {record.verdict}, is the answer, as in Logic-LM)")
    if "solutions" in explanation:  # CSP: the option that holds in every solution
        count = explanation["solutions"]
        entailed = explanation.get("entailed")
        lines.append(f"{count} solution{'s' if count != 1 else ''}" +
                     (f"; option {entailed} holds in every one" if entailed else ""))
        for number, solution in enumerate(explanation.get("sample", []), start=1):
            lines.append(f"  solution {number}: " + ", ".join(f"{k} = {v}" for k, v in solution.items()))
    return lines


def _plain(console: Console, text: str) -> None:
    console.print(text, markup=False, highlight=False, soft_wrap=True)


def render_status(console: Console, folders: list) -> None:
    """`logicpipe status`: a line per run folder (by its path under RUN), then a table of its batches,
    then what is pending. Of a kb batch (finished None: it writes no metrics) only its records are said."""
    import time

    for folder in folders:
        stages = ", ".join(f"{stage} {count}" for stage, count in folder.stages.items()) or "no records yet"
        done = ("" if folder.finished is None
                else f"; finished, accuracy {rate(folder.metrics, 'accuracy', folder.metrics.get('total'))}"
                if folder.finished
                else "; finished" if folder.finished else "; not finished")
        spent = "" if folder.tokens is None else f"; {folder.tokens:,} tokens" + (
            f", cost {money(folder.cost)}" if folder.cost is not None else "")
        _plain(console, f"{folder.label}: {counted(folder.problems, 'problem')} with records ({stages}){done}{spent}")
        for warning in folder.warnings:
            _plain(console, f"warning: {warning}")
        if not folder.batches:
            continue
        table = Table(title=f"{counted(len(folder.batches), 'batch')}, {len(folder.pending)} not read yet")
        for column in ("batch", "status", "lines", "submitted", "replies stored", "failed", "never ran"):
            table.add_column(column, justify="right" if column in ("lines", "replies stored", "failed", "never ran")
                             else "left")
        for batch in folder.batches:
            when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(batch.created)) if batch.created else "?"
            numbers = [str(n) if n is not None else "-" for n in (batch.stored, batch.failed, batch.unfinished)]
            table.add_row(batch.id or "-", batch.status, str(batch.lines), when, *numbers)
        console.print(table)
        if folder.pending:
            _plain(console, f"{counted(len(folder.pending), 'batch')} not read yet: a run going on polls them; else re-run the "
                   "command that made them, with --batch, to read them (nothing is submitted twice)")


def render_diff(console: Console, result) -> None:
    """`logicpipe diff`: the 2x2 table, the paired figures, then each problem that changed (with both
    answers, verdicts and programs) and the problems only one run scored."""
    from .diff import summary_line

    _plain(console, f"{result.dataset}: A = {result.run_a}, B = {result.run_b}")
    table = Table(title=f"{result.paired} problems scored in both runs")
    for column in ("", "B right", "B wrong"):
        table.add_column(column, justify="right")
    table.add_row("A right", str(result.both_right), str(result.only_a))
    table.add_row("A wrong", str(result.only_b), str(result.both_wrong))
    console.print(table)
    _plain(console, summary_line(result))
    if result.changed:
        changed = Table(title=f"{len(result.changed)} problems changed", show_lines=True)
        for column in ("id", "gold", "A answer", "A verdict", "B answer", "B verdict", "A program", "B program"):
            changed.add_column(column, overflow="fold")
        for c in result.changed:
            changed.add_row(c.id, c.gold or "–", _mark(c.a), c.a.verdict or "–", _mark(c.b), c.b.verdict or "–",
                            c.a.program or "–", c.b.program or "–")
        console.print(changed)
    for name, ids in (("A", result.only_in_a), ("B", result.only_in_b)):
        if ids:
            _plain(console, f"{len(ids)} problems scored only in {name}: {', '.join(ids)}")


def _mark(side) -> str:
    return f"{side.answer or '–'} ({'right' if side.correct else 'wrong'})"


def render_epochs(console: Console, summary: dict) -> None:
    """--epochs: the mean accuracy over the epochs with its clustered standard error, then how many
    problems were right in how many epochs."""
    mean, se = summary["mean_accuracy"], summary["stderr_clustered"]
    spread = "" if se is None else f" ± {se:.2f} (standard error clustered by problem)"
    _plain(console, f"{summary['epochs']} epochs over {summary['problems']} problems: mean accuracy "
           f"{'–' if mean is None else f'{mean:.2f}%'}{spread}; by epoch "
           + ", ".join("–" if a is None else f"{a:.2f}%" for a in summary["accuracy_by_epoch"]))
    table = Table(title=f"consistency: {summary['consistent']} of {summary['problems']} problems right in every "
                        "epoch or in none")
    table.add_column("right in")
    table.add_column("problems", justify="right")
    for label, count in summary["right_in"].items():
        table.add_row(label, str(count))
    console.print(table)
    _plain(console, f"epochs: {summary['path']}")
