"""Language gradients: feedback for each node of a trajectory, backward from interpret to solve to refine
to formulate. Each node's request carries the loss and the feedback already given to the node
downstream of it, so blame flows from the answer back to the prompts that caused it. A trajectory
whose first program ran was never refined: it has no refine node and its formulate gradient is
conditioned on solve's."""

from __future__ import annotations

from ..core.errors import LLMError
from ..core.records import Usage
from ..llm import Request
from .calls import Budget, Result, ask, template
from .config import OptimizeConfig
from .forward import Trace
from .loss import describe
from .params import PromptParams
from .records import GradientRecord, LossRecord, Node

BACKWARD: list[Node] = ["interpret", "solve", "refine", "formulate"]

def _node_text(node: Node, params: PromptParams, formulate_prompt: str, solver: str) -> str:
    rendered = params.render()
    if node == "interpret":
        return "Step: interpret. It maps the solver's verdict to an option letter, and gives a backup answer " \
               "when no program executed. It has no prompt."
    if node == "solve":
        return f"Step: solve. The {solver} solver runs the program as written; it is deterministic and has no " \
               "prompt: whatever it did comes from the program it was given."
    if node == "refine":
        guide = rendered.get(f"guide-{solver}", "")
        return (f"Step: refine. The model repairs a rejected program with this prompt:\n{rendered.get('refine', '')}"
                f"\nand this guide to common errors:\n{guide}")
    return f"Step: formulate. The model writes the program with this prompt:\n{rendered.get(formulate_prompt, '')}"


def nodes(trace: Trace) -> list[Node]:
    """The nodes a trajectory went through, last first: refine only where a program was repaired."""
    return [node for node in BACKWARD if node != "refine" or trace.outcome.rounds > 0]


def gradients(config: OptimizeConfig, budget: Budget, traces: list[Trace], losses: list[LossRecord],
              params: PromptParams, formulate_prompt: str, solver: str, step: int) -> list[GradientRecord]:
    """One round of requests per node, backward; each round one request per trajectory that has a loss
    and went through that node."""
    loss_of = {loss.id: loss for loss in losses if loss.score is not None}
    judged = [t for t in traces if t.outcome.id in loss_of]
    path = {t.outcome.id: nodes(t) for t in judged}
    records: list[GradientRecord] = []
    downstream: dict[str, GradientRecord] = {}
    prompt = template(config, "opt-gradient")
    for node in BACKWARD:
        requests = []
        after: dict[str, Node | None] = {}
        for trace in judged:
            pid = trace.outcome.id
            if node not in path[pid]:
                continue
            index = path[pid].index(node)
            after[pid] = path[pid][index - 1] if index else None
            loss = loss_of[pid]
            carried = ""
            if after[pid] is not None and pid in downstream and downstream[pid].node == after[pid]:
                carried = f"\n\nFeedback given to the next step ({after[pid]}):\n{downstream[pid].gradient}"
            messages = prompt.render(trajectory=describe(trace, config.supervised), score=f"{loss.score:g}",
                                     critique=loss.critique, step=_node_text(node, params, formulate_prompt, solver),
                                     downstream=carried)
            requests.append(Request(f"{pid}\x1f{node}", messages,
                                    0.0, 1024, purpose="gradient", problem=pid))
        found: dict[str, GradientRecord] = {}

        def arrived(request: Request, result: Result, node: Node = node, after: dict[str, Node | None] = after,
                    found: dict[str, GradientRecord] = found) -> None:
            pid = request.key.rsplit("\x1f", 1)[0]
            if isinstance(result, LLMError):
                found[pid] = GradientRecord(step=step, id=pid, node=node, gradient="", downstream=after[pid],
                                            error=f"llm: {result}")
                return
            spent = Usage(prompt_tokens=result.prompt_tokens, completion_tokens=result.completion_tokens, calls=1,
                          cached_calls=int(result.cached))
            found[pid] = GradientRecord(step=step, id=pid, node=node, gradient=result.text.strip(),
                                        downstream=after[pid], usage=spent)

        ask(config, budget, requests, arrived)
        ordered = [found[t.outcome.id] for t in judged if t.outcome.id in found]
        records += ordered
        downstream.update({g.id: g for g in ordered if g.error is None})
    return records
