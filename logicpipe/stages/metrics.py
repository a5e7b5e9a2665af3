"""Scores in Logic-LM's terms (Exe_Rate, Exe_Acc), on our definition and on the paper's, plus accuracy
with the backup answer, refinement and token figures."""

from __future__ import annotations

from collections import Counter

from ..core.records import ErrorCategory, EvaluateRecord, Usage, executed
from ..core.trajectory import Trajectory
from .config import RunConfig

# Logic-LM counts a Z3 program that selects no option as an execution error; for every other solver a
# program that ran to the end counts as executed, whether or not it decided an option.
_NO_ANSWER_IS_UNEXECUTED = {"smt"}


def _percent(part: int, whole: int) -> float:
    return round(100.0 * part / whole, 2) if whole else 0.0


def compute_metrics(records: list[EvaluateRecord], config: RunConfig, solver: str) -> dict:
    total = len(records)
    ran = [r for r in records if r.executed]
    paper_executed = [r for r in ran if not (solver in _NO_ANSWER_IS_UNEXECUTED and r.error is not None
                                                  and r.error.category == ErrorCategory.no_answer)]
    failures = Counter(r.error.category.value for r in records if r.error is not None)
    return {
        "dataset": config.spec.key,
        "split": config.split,
        "source": f"replay:{config.programs.name}" if config.programs else f"llm:{config.model}",
        "total": total,
        "executed": len(ran),
        "exe_rate": _percent(len(ran), total),
        "exe_acc": _percent(sum(r.correct_executed for r in ran), len(ran)),
        "exe_rate_logiclm": _percent(len(paper_executed), total),
        "exe_acc_logiclm": _percent(sum(r.correct_executed for r in paper_executed), len(paper_executed)),
        "correct": sum(r.correct for r in records),
        "accuracy": _percent(sum(r.correct for r in records), total),
        "failures": dict(sorted(failures.items())),
        "backup": config.backup,
        "seed": config.seed,
    }


def model_metrics(config: RunConfig, trajectories: list[Trajectory]) -> dict:
    """Exe_Rate before refinement and the tokens every model call of this run used (from the records,
    so the figures are the same however often the run was resumed)."""
    extra: dict = {}
    # The formulate records say where the programs came from, also when evaluate runs on its own.
    sources = {t.formulated.source for t in trajectories if t.formulated is not None}
    if len(sources) == 1:
        extra["source"] = sources.pop()
    rounds = max((t.rounds() for t in trajectories), default=0)
    if rounds:
        first = [t.solved[0] for t in trajectories if 0 in t.solved]
        extra["exe_rate_before_refinement"] = _percent(sum(executed(r.error) for r in first), len(first))
        extra["refinement_rounds"] = rounds
    usages = []
    for trajectory in trajectories:
        records = [trajectory.formulated, *trajectory.refined.values(), *trajectory.decided.values(),
                   trajectory.interpreted]
        usages += [r.usage for r in records if r is not None and r.usage is not None]
    decisions = [d for t in trajectories for d in t.decided.values()]
    if decisions:  # --refine semantic: how many revisions were judged, and how many replaced a program
        extra["revisions"] = {"decided": len(decisions), "revised": sum(d.revised for d in decisions),
                              **dict(sorted(Counter(d.outcome for d in decisions).items()))}
    if usages:
        tokens = sum(usages, Usage())
        extra["tokens"] = tokens.model_dump()
        if config.price_prompt is not None or config.price_completion is not None:
            extra["cost"] = round((tokens.prompt_tokens * (config.price_prompt or 0)
                                   + tokens.completion_tokens * (config.price_completion or 0)) / 1e6, 6)
    return extra
