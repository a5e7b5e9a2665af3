"""The optimisers. The prompt optimiser rewrites one component of one prompt from the batch's gradients,
under a "learning rate" that bounds how much may change; a rewrite that loses a template variable is
sent back with the reason, up to three attempts (demonstrations are harvested instead: demos.py). The
structure optimiser proposes one change from the structure menu. Both requests are PromptSet templates
(opt-rewrite.txt, opt-structure.txt)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import LLMError
from ..llm import Request
from .calls import Budget, Result, ask, reply_json, template
from .config import OptimizeConfig
from .forward import Trace
from .params import PromptParams, Structure, check_candidate
from .records import GradientRecord, LossRecord, Node

ATTEMPTS = 3
_FENCED = re.compile(r"^```[\w-]*\n(.*?)\n?```$", re.S)
_FORMULATE_ORDER = ("principles", "demonstrations", "description", "format")
_WHAT = {
    "description": "the task description at the top of the system prompt",
    "format": "the grammar and output format the program must follow",
    "principles": "rules learnt from mistakes, one per line starting with '- ' (it may be empty so far)",
}
_RATE = {
    "principles": "add, change or remove at most two rules; keep the others word for word",
}
LEARNING_RATE = "change at most three sentences or lines; keep everything else word for word"


@dataclass(frozen=True)
class Tried:
    """A rolled-back rewrite of a component, with its validation score and the one it had to beat."""

    text: str
    score: float | None = None
    against: float | None = None


def _shown(score: float | None) -> str:
    return "unknown" if score is None else f"{score:.3f}"


@dataclass
class Proposal:
    kind: str  # "prompt" or "structure"
    params: PromptParams | None = None  # the candidate (None: every attempt was rejected)
    structure: Structure | None = None
    prompt_id: str | None = None
    component: str | None = None
    change: dict[str, Any] = field(default_factory=dict)
    attempts: int = 0
    reason: str | None = None  # why the last attempt was rejected
    source: str | None = None  # a harvested demonstration: the training problem it came from


def targets(params: PromptParams, formulate_prompt: str, solver: str) -> list[tuple[str, str]]:
    """The components the prompt optimiser may rewrite, formulate's first (its program decides most).
    Demonstrations are formulate's only: they are harvested from correct runs (demos.py), never written."""
    order = [(formulate_prompt, c) for c in _FORMULATE_ORDER]
    order += [("refine", c) for c in _FORMULATE_ORDER if c != "demonstrations"] + [(f"guide-{solver}", "principles")]
    return [(p, c) for p, c in order if p in params.prompts and c in params.prompts[p].trainable]


def node_of(prompt_id: str, formulate_prompt: str) -> Node:
    return "formulate" if prompt_id == formulate_prompt else "refine"


def _feedback(gradients: list[GradientRecord], losses: list[LossRecord], node: Node) -> str:
    score = {loss.id: loss.score for loss in losses}
    lines = []
    for gradient in gradients:
        if gradient.node == node and gradient.error is None and gradient.gradient:
            judged = score.get(gradient.id)
            lines.append(f"- (a problem scored {judged:g}/10) {gradient.gradient[:1500]}" if judged is not None
                         else f"- {gradient.gradient[:1500]}")
    return "\n".join(lines)


def _unfence(text: str) -> str:
    text = text.strip()
    fenced = _FENCED.match(text)
    return fenced.group(1) if fenced else text


def _reply(config: OptimizeConfig, budget: Budget, request: Request) -> str | None:
    got: list[Result] = []
    ask(config, budget, [request], lambda _request, result: got.append(result))
    if not got or isinstance(got[0], LLMError):
        return None
    return got[0].text


def propose_prompt(config: OptimizeConfig, budget: Budget, params: PromptParams, prompt_id: str,
                   component: str, solver: str, gradients: list[GradientRecord], losses: list[LossRecord],
                   step: int, tried: list[Tried] | None = None) -> Proposal:
    """A rewrite of one component; `tried` holds earlier rewrites of it that validation did not keep,
    each with its validation score and the score of the state it was compared with (OPRO-style: the
    rewriter sees how far each attempt fell short, not only that it did)."""
    proposal = Proposal("prompt", prompt_id=prompt_id, component=component)
    feedback = _feedback(gradients, losses, node_of(prompt_id, config.spec.prompt))
    if not feedback:
        proposal.reason = "no feedback for this prompt in the batch"
        return proposal
    current = params.component(prompt_id, component)
    shown_tried = ""
    if tried:
        shown_tried = ("\n\nRewrites already tried that did not do better on held-out problems (do not repeat them), "
                       "with their validation score and that of the prompt they were compared with:\n")
        shown_tried += "\n".join(f'<tried score="{_shown(t.score)}" against="{_shown(t.against)}">\n{t.text}\n</tried>'
                                  for t in tried[-3:])
    rewrite = template(config, "opt-rewrite")

    def render(retry: str) -> list[dict[str, str]]:
        return rewrite.render(prompt_id=prompt_id, prompt=params.render()[prompt_id], component=component,
                              what=_WHAT.get(component, component), rate=_RATE.get(component, LEARNING_RATE),
                              current=current, step=str(step), feedback=feedback, tried=shown_tried, retry=retry)

    def check(text: str) -> str | None:
        new_text = _unfence(text)
        if new_text.strip() == current.strip():
            return "the rewrite changed nothing"
        candidate = params.with_component(prompt_id, component, new_text)
        reason = check_candidate(params, candidate, prompt_id, solver)
        if reason is None:
            proposal.params = candidate
        return reason

    _attempts(config, budget, proposal, f"optimize-{step}", "optimize", 4096, render,
              lambda attempt, rejected: f"\n\nAttempt {attempt} of {ATTEMPTS}. Your previous rewrite was rejected: "
                                        f"{rejected}. Fix that.", check)
    return proposal


def _attempts(config: OptimizeConfig, budget: Budget, proposal: Proposal, key: str, purpose: str, max_tokens: int,
              render: Callable[[str], list[dict[str, str]]], retry: Callable[[int, str], str],
              check: Callable[[str], str | None]) -> None:
    """Ask up to ATTEMPTS times; `render` makes the request's messages from the retry text ("" at first);
    `check` takes a reply (filling in the proposal) or says why not, and a retry carries that reason
    (`retry` words it). proposal.reason is the last rejection, or None."""
    rejected = ""
    for attempt in range(1, ATTEMPTS + 1):
        proposal.attempts = attempt
        # The attempt number keeps a retry from being the same request (whose cached reply would come back).
        messages = render(retry(attempt, rejected) if rejected else "")
        text = _reply(config, budget, Request(f"{key}-{attempt}", messages, 0.0, max_tokens, purpose=purpose,
                                              problem=""))
        reason = "the request failed" if text is None else check(text)
        if reason is None:
            proposal.reason = None
            return
        rejected = reason
    proposal.reason = rejected


def _summary(traces: list[Trace]) -> str:
    total = len(traces)
    executed = sum(t.outcome.executed for t in traces)
    correct = sum(t.outcome.correct for t in traces)
    refined = sum(bool(t.outcome.rounds) for t in traces)
    errors: dict[str, int] = {}
    for t in traces:
        if t.outcome.error_category:
            errors[t.outcome.error_category] = errors.get(t.outcome.error_category, 0) + 1
    return (f"{total} problems: {executed} programs executed, {correct} answers correct, {refined} refined; "
            f"errors: {json.dumps(errors) if errors else 'none'}")


def parse_change(text: str) -> tuple[str, Any]:
    data = reply_json(text, "the reply")
    if not isinstance(data, dict) or not isinstance(data.get("field"), str) or "value" not in data:
        raise ValueError('answer with {"field": ..., "value": ...}')
    return data["field"], data["value"]


def propose_structure(config: OptimizeConfig, budget: Budget, structure: Structure, traces: list[Trace],
                      gradients: list[GradientRecord], step: int, tried: list[dict[str, Any]] | None = None) -> Proposal:
    """One change from the menu; `tried` holds changes that validation already rolled back from this state."""
    proposal = Proposal("structure")
    tried = tried or []
    notes = "\n".join(f"- {g.node}: {g.gradient[:600]}" for g in gradients
                      if g.node in ("solve", "refine", "interpret") and g.error is None and g.gradient)
    prompt = template(config, "opt-structure")
    shown_tried = f"\nAlready tried without doing better on held-out problems: {json.dumps(tried)}" if tried else ""

    def render(retry: str) -> list[dict[str, str]]:
        return prompt.render(structure=json.dumps(structure.model_dump(exclude={'temperature'})),
                             menu=json.dumps(Structure.MENU), summary=_summary(traces), notes=notes or "(none)",
                             tried=shown_tried, retry=retry)

    def check(text: str) -> str | None:
        try:
            name, value = parse_change(text)
        except ValueError as exc:
            return str(exc)
        proposal.change = {name: value}  # shown in the record even when it is rejected
        reason = Structure.off_menu(name, value)
        if reason is None and getattr(structure, name) == value:
            reason = f"{name} is already {value!r}"
        if reason is None and {name: value} in tried:
            reason = f"{name}={value!r} was tried and did no better"
        if reason is None:
            reason = structure.conflict(name, value)
        if reason is None:
            proposal.structure = structure.with_change(name, value)
        return reason

    _attempts(config, budget, proposal, f"structure-{step}", "structure", 512, render,
              lambda attempt, rejected: f"\n\nAttempt {attempt} of {ATTEMPTS}. Your previous proposal was rejected: "
                                        f"{rejected}.", check)
    return proposal
