"""Which component to rewrite, from what the gradients blame (not in turn): each gradient weighs by how
badly its trajectory was judged, "no change needed" weighs nothing; a formulate gradient blames the
formulate prompt, a refine gradient the refine prompt and the solver's guide. Within a prompt, the
components the gradients name (an example, the grammar, a rule to remember, the task) get more blame.
Demonstrations are a target only when the batch has a correct run to harvest one from."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .optimizers import node_of, targets
from .params import PromptParams
from .records import GradientRecord, LossRecord

# Words that point a gradient at a component (matched as word starts, case-insensitive).
_NAMES = {
    "description": ("task", "description", "instruction", "goal"),
    "format": ("format", "grammar", "syntax", "parse", "declar", "section", "header"),
    "demonstrations": ("example", "demonstration", "sample program"),
    "principles": ("principle", "remember", "always", "never", "check", "careful", "rule of thumb"),
}
_NO_CHANGE = re.compile(r"\bno change (?:is )?needed\b", re.IGNORECASE)


@dataclass(frozen=True)
class Choice:
    ranked: list[tuple[str, str]]  # (prompt id, component), most blamed first
    blame: dict[str, float]  # "prompt/component" -> blame
    why: str


def weight(gradient: GradientRecord, score: float | None) -> float:
    """How much one gradient blames its node: 1 for a run judged 0/10, nothing for 10/10 or for a
    gradient that says its step needs no change (a run without a judged score weighs 1)."""
    if gradient.error is not None or not gradient.gradient.strip() or _NO_CHANGE.search(gradient.gradient):
        return 0.0
    return 1.0 if score is None else max(0.0, (10.0 - score) / 10.0)


def _mentions(component: str, text: str) -> int:
    lowered = text.lower()
    return sum(len(re.findall(r"\b" + re.escape(word), lowered)) for word in _NAMES.get(component, ()))


def rank(params: PromptParams, formulate_prompt: str, solver: str, gradients: list[GradientRecord],
         losses: list[LossRecord], harvest: bool) -> Choice:
    """The trainable components by blame, most first (ties keep targets()'s order); those with no blame
    at all are left out. `harvest`: the batch has a run whose program may become a demonstration."""
    score = {loss.id: loss.score for loss in losses}
    by_node: dict[str, list[tuple[float, str]]] = {"formulate": [], "refine": []}
    for gradient in gradients:
        if gradient.node in by_node:
            by_node[gradient.node].append((weight(gradient, score.get(gradient.id)), gradient.gradient))
    blame: dict[str, float] = {}
    for prompt_id, component in targets(params, formulate_prompt, solver):
        if component == "demonstrations" and not harvest:
            continue
        node = node_of(prompt_id, formulate_prompt)
        # Each blamed gradient counts once for every component, and once more per time it names this one.
        total = sum(w * (1 + _mentions(component, text)) for w, text in by_node[node] if w > 0)
        if total > 0:
            blame[f"{prompt_id}/{component}"] = round(total, 3)
    order = {key: i for i, key in enumerate(blame)}
    ranked_keys = sorted(blame, key=lambda key: (-blame[key], order[key]))
    ranked = [(key.rsplit("/", 1)[0], key.rsplit("/", 1)[1]) for key in ranked_keys]
    node_blame = {node: round(sum(w for w, _ in items), 3) for node, items in by_node.items()}
    if not ranked:
        why = "no gradient of the batch blames a prompt (every one said no change was needed, or none arrived)"
    else:
        top = ranked_keys[0]
        why = (f"{top} is blamed most ({blame[top]:g}); gradient blame by node: formulate "
               f"{node_blame['formulate']:g}, refine {node_blame['refine']:g}")
    return Choice(ranked, blame, why)
