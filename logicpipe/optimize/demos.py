"""Demonstrations harvested from correct runs (DSPy-style bootstrapping): a training trajectory whose
program executed in the solver and gave the gold answer (unsupervised: whose program executed) becomes a
worked example of the formulate prompt, laid out like the prompt's own problem section. The model never
writes a demonstration: the program shown is one the solver ran and the gold answer confirmed."""

from __future__ import annotations

import re

from ..prompts import problem_fields
from .forward import Trace
from .optimizers import Proposal
from .params import PromptParams, check_candidate
from .records import LossRecord

# A harvested example is added while the prompt has fewer than this many; then it replaces the last one
# (the start template's first examples stay), so the prompt does not grow without bound.
MAX_DEMOS = 4
_FIELD = re.compile(r"\{\{(\w+)\}\}")


def harvestable(traces: list[Trace], losses: list[LossRecord], supervised: bool) -> list[Trace]:
    """Trajectories whose program may be shown: it executed (the solver ran it) and, supervised, the
    answer it gave is the gold one (a right answer from a backup guess does not count). The judge's
    best-scored first, then in batch order."""
    score = {loss.id: loss.score for loss in losses if loss.score is not None}
    fit = [t for t in traces if t.outcome.executed and t.outcome.program and (t.outcome.correct or not supervised)]
    return sorted(fit, key=lambda t: -score.get(t.outcome.id, 0.0))


def demonstration(trace: Trace, tail: str) -> str:
    """The problem laid out as the prompt's problem section (`tail`, from its first line with a field)
    under "Example.", then its program after a "Program:" line."""
    lines = tail.rstrip("\n").split("\n")
    first = next((i for i, line in enumerate(lines) if _FIELD.search(line)), 0)
    section = lines[first:]
    if not section or section[-1].strip() != "Program:":
        section.append("Program:")
    # A blank line inside a field would read as the start of the next example when the block is split.
    fields = {k: re.sub(r"\n\s*\n", "\n", v) for k, v in problem_fields(trace.problem).items()}
    filled = _FIELD.sub(lambda m: fields.get(m.group(1), m.group(0)), "\n".join(section))
    return f"Example.\n{filled}\n{(trace.outcome.program or '').strip()}"


def propose_demonstration(params: PromptParams, prompt_id: str, traces: list[Trace], losses: list[LossRecord],
                          supervised: bool, solver: str) -> Proposal:
    """The prompt with one more harvested example (or its last one replaced by it); no model request."""
    proposal = Proposal("prompt", prompt_id=prompt_id, component="demonstrations", attempts=0)
    current = params.prompts[prompt_id]
    shown = "\n\n".join(current.demonstrations)
    for trace in harvestable(traces, losses, supervised):
        if trace.problem.context.strip() and trace.problem.context.strip() in shown:
            continue  # already an example
        demos = list(current.demonstrations)
        new = demonstration(trace, current.tail)
        demos = demos + [new] if len(demos) < MAX_DEMOS else demos[:-1] + [new]
        candidate = params.with_component(prompt_id, "demonstrations", "\n\n".join(demos))
        reason = check_candidate(params, candidate, prompt_id, solver)  # runs the program in the solver again
        if reason is None:
            proposal.params, proposal.source = candidate, trace.outcome.id
            return proposal
        proposal.reason = reason
    if proposal.reason is None:
        proposal.reason = ("no training problem of the batch had a program that executed"
                           + (" and gave the gold answer" if supervised else "") + " to harvest")
    return proposal
