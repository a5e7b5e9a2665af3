"""The language loss: a judge reads one trajectory and answers with a score from 0 to 10 and a critique.
Supervised, it sees the gold answer and whether the pipeline's answer matched it; unsupervised, it sees
neither, only what the pipeline did."""

from __future__ import annotations

import json

from ..core.errors import LLMError
from ..core.records import Usage
from ..llm import Request
from .calls import Budget, Result, ask, reply_json, template
from .config import OptimizeConfig
from .forward import Trace
from .records import LossRecord


def describe(trace: Trace, supervised: bool) -> str:
    """The trajectory as text: the problem, the programs, what the solver said, the answer (and, when
    supervised, the gold answer)."""
    problem, outcome = trace.problem, trace.outcome
    parts = [f"Problem:\n{problem.context}\n{problem.question}\n" + "\n".join(problem.options),
             f"Program written (formulate):\n{trace.first_program or '(none)'}",
             f"Solver on it: {trace.first_result}"]
    if outcome.rounds:
        parts += [f"Repaired program after {outcome.rounds} refinement round(s):\n{outcome.program or '(none)'}",
                  f"Solver on the repair: {trace.last_result}"]
    parts.append(f"Answer given: {outcome.answer or '(none)'}"
                 + ("" if outcome.executed else " (no program executed; a backup answer)"))
    if supervised:
        verdict = "correct" if outcome.correct else "wrong"
        parts.append(f"Gold answer: {outcome.gold}; the answer is {verdict}.")
    return "\n\n".join(parts)


def parse_loss(text: str) -> tuple[float, str]:
    """The score and critique of a judge's reply; ValueError says why a reply is unusable."""
    data = reply_json(text, "the judge's reply")
    if not isinstance(data, dict):
        raise ValueError("the judge's reply is not a JSON object")
    score = data.get("score")
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not 0 <= score <= 10:
        raise ValueError(f"score {score!r} is not a number from 0 to 10")
    critique = data.get("critique", "")
    return float(score), critique if isinstance(critique, str) else json.dumps(critique)


def losses(config: OptimizeConfig, budget: Budget, traces: list[Trace], step: int) -> list[LossRecord]:
    """One judge request per trajectory; a reply that does not parse, or a failed request, is a record with
    score None and the reason, never a crash."""
    by_id = {t.outcome.id: t for t in traces}
    judge = template(config, "opt-judge")
    requests = [Request(t.outcome.id, judge.render(trajectory=describe(t, config.supervised)),
                        0.0, 1024, purpose="loss", problem=t.outcome.id) for t in traces]
    records: dict[str, LossRecord] = {}

    def arrived(request: Request, result: Result) -> None:
        outcome = by_id[request.key].outcome
        base = LossRecord(step=step, id=request.key, supervised=config.supervised, outcome=outcome)
        if isinstance(result, LLMError):
            records[request.key] = base.model_copy(update={"error": f"llm: {result}"})
            return
        spent = Usage(prompt_tokens=result.prompt_tokens, completion_tokens=result.completion_tokens, calls=1,
                      cached_calls=int(result.cached))
        try:
            score, critique = parse_loss(result.text)
        except ValueError as exc:
            records[request.key] = base.model_copy(update={"usage": spent, "critique": result.text[:2000],
                                                           "error": str(exc)})
            return
        records[request.key] = base.model_copy(update={"usage": spent, "score": score, "critique": critique})

    ask(config, budget, requests, arrived)
    return [records[t.outcome.id] for t in traces if t.outcome.id in records]
