"""Small worlds (solvers/fol_worlds.py) checked against two oracles: Prover9 never proves a target a
world refutes, and every world returned makes its formulas true when this file evaluates them itself."""

import random
from concurrent.futures import ThreadPoolExecutor

import pytest

from logicpipe.solvers import execute_task
from logicpipe.solvers.fol import _input, _Names, to_prover9
from logicpipe.solvers.fol_parser import Bin, Const, Eq, Not, Pred, Quant, Var, parse_formula
from logicpipe.solvers.fol_worlds import FOUND, NONE, UNDECIDED, counter_worlds, skolem_constants, world
from logicpipe.solvers.prover9 import Searches

ARITY = {"P": 1, "Q": 1, "R": 2}
CONSTANTS = ("a", "b")


def _formula(rng: random.Random, depth: int, bound: tuple[str, ...]) -> object:
    terms = [Const(c) for c in CONSTANTS] + [Var(v) for v in bound]
    if depth == 0 or rng.random() < 0.25:
        if rng.random() < 0.15:
            return Eq(rng.choice(terms), rng.choice(terms))
        name = rng.choice(sorted(ARITY))
        return Pred(name, tuple(rng.choice(terms) for _ in range(ARITY[name])))
    kind = rng.choice(["not", "bin", "bin", "quant"])
    if kind == "not":
        return Not(_formula(rng, depth - 1, bound))
    if kind == "quant" and len(bound) < 2:
        var = "xy"[len(bound)]
        return Quant(rng.choice(["all", "exists"]), var, _formula(rng, depth - 1, (*bound, var)))
    op = rng.choice(["and", "or", "imp", "iff", "xor"])
    return Bin(op, _formula(rng, depth - 1, bound), _formula(rng, depth - 1, bound))


def _cases(count: int, seed: int = 11) -> list[tuple[list, object]]:
    rng = random.Random(seed)
    return [([_formula(rng, 3, ()) for _ in range(rng.randint(1, 4))], _formula(rng, 3, ())) for _ in range(count)]


def _prover9(cases: list[tuple[list, object]]) -> list[str]:
    """Prover9's status on each case (proved, exhausted, limit), eight at a time."""
    statuses: dict[str, str] = {}
    for start in range(0, len(cases), 8):
        inputs = {}
        for number, (premises, goal) in enumerate(cases[start:start + 8], start):
            names = _Names()
            inputs[str(number)] = _input([to_prover9(p, names) for p in premises], to_prover9(goal, names), 2, 100)
        with Searches(inputs, 2) as searches:
            statuses.update({search.label: search.status for search in searches})
    return [statuses[str(number)] for number in range(len(cases))]


def test_a_refuting_world_is_never_contradicted_by_a_prover9_proof():
    cases = _cases(160)
    found = [counter_worlds(premises, {"goal": goal}, 5)["goal"] for premises, goal in cases]
    proved = _prover9(cases)
    clash = [number for number, (f, p) in enumerate(zip(found, proved)) if f == FOUND and p == "proved"]
    assert clash == []
    # Not vacuous: both sides say something on many cases, and between them they decide nearly all.
    assert found.count(FOUND) >= 40 and proved.count("proved") >= 40
    assert sum(f == FOUND or p in ("proved", "exhausted") for f, p in zip(found, proved)) >= 150


def test_where_the_class_decides_no_world_means_a_proof():
    # Bernays-Schonfinkel without `=`: searched at one size, and no world there means no world at all,
    # so Prover9 proves the goal; it never reports such a goal's search exhausted.
    cases = [(premises, goal) for premises, goal in _cases(800, seed=23)
             if all(skolem_constants(f) is not None for f in [*premises, Not(goal)])]
    found = [counter_worlds(premises, {"goal": goal}, 5)["goal"] for premises, goal in cases]
    proved = _prover9(cases)
    assert len(cases) >= 60 and found.count(NONE) >= 20 and found.count(FOUND) >= 20
    for number, (f, p) in enumerate(zip(found, proved)):
        assert (f, p) in ((FOUND, "exhausted"), (FOUND, "limit"), (NONE, "proved"), (NONE, "limit")), cases[number]
    assert sum(f == NONE and p == "proved" for f, p in zip(found, proved)) >= found.count(NONE) - 2


@pytest.mark.parametrize("text, count", [
    ("∀x (A(x) → B(x))", 0),
    ("∃x A(x) ∧ ∃y B(y)", 2),
    ("¬∀x A(x)", 1),  # an existential once the negation is pushed in
    ("(∀x A(x)) → B(ann)", 1),  # so is a universal on the left of an implication
    ("∀x A(x) → B(ann)", 0),  # (the quantifier's body runs to the right)
    ("∃x ∀y R(x, y)", 1),
    ("∀x ∃y R(x, y)", None),  # a Skolem function
    ("¬∃x ∀y R(x, y)", None),
    ("(∀x A(x)) → ∀y B(y)", 1),  # the existential is beside the universal, not in its scope
    ("A(ann) ↔ B(ann)", 0),
    ("A(ann) ↔ ∀x B(x)", None),
    ("ann = bob", None),
    ("∀x (A(x) → x ≠ ann)", None),
])
def test_the_class_where_one_size_decides(text, count):
    assert skolem_constants(parse_formula(text)) == count


def _holds(node, world: dict, env: dict) -> bool:
    """This file's own evaluator of a formula in a world returned by `world`."""
    things, true = world["things"], set(world["true"])
    name = {**{c: c for c in CONSTANTS}, **env}
    if isinstance(node, Pred):
        return (node.name + (f"({', '.join(name[t.name] for t in node.args)})" if node.args else "")) in true
    if isinstance(node, Eq):
        return name[node.left.name] == name[node.right.name]
    if isinstance(node, Not):
        return not _holds(node.body, world, env)
    if isinstance(node, Quant):
        values = (_holds(node.body, world, {**env, node.var: thing}) for thing in things)
        return all(values) if node.kind == "all" else any(values)
    left, right = _holds(node.left, world, env), _holds(node.right, world, env)
    return {"and": left and right, "or": left or right, "imp": not left or right, "iff": left == right,
            "xor": left != right}[node.op]


def test_every_world_returned_makes_its_formulas_true():
    shown = 0
    for premises, goal in _cases(120, seed=5):
        formulas = [*premises, goal]
        outcome, found = world(formulas, 5)
        if outcome == FOUND:
            assert found is not None
            assert all(_holds(f, found, {}) for f in formulas), formulas
            shown += 1
        else:
            assert outcome == NONE
    assert shown >= 40


def test_worlds_are_searched_safely_from_many_threads():
    # The gold checks call solvers from a thread pool; a shared Z3 context crashed the process.
    cases = _cases(40, seed=3)
    expected = [counter_worlds(p, {"goal": g}, 5) for p, g in cases]
    with ThreadPoolExecutor(8) as pool:
        for _ in range(3):
            assert list(pool.map(lambda case: counter_worlds(case[0], {"goal": case[1]}, 5), cases)) == expected


def test_what_cannot_be_grounded_is_left_undecided():
    f = Quant("all", "x", Pred("P", (Var("x"),)))
    nested = f
    for var in "yzuvw":
        nested = Quant("all", var, Bin("and", nested, Pred("R", (Var(var), Var(var)))))
    goal = Bin("and", Pred("Q", (Const("a"),)), Pred("R", (Const("b"), Const("c"))))
    assert counter_worlds([nested], {"goal": goal}, 5, max_ground=500) == {"goal": UNDECIDED}  # 3^6 leaves
    assert counter_worlds([nested], {"goal": goal}, 5) == {"goal": FOUND}
    assert world([f, Not(Pred("P", (Var("stray"),)))], 5) == (UNDECIDED, None)
    assert counter_worlds([f], {"goal": goal}, 0) == {"goal": UNDECIDED}  # no time left


# Through the solver, a program of our own on which Prover9 alone runs to its limit in the searches that
# cannot succeed (transitivity keeps it busy), so before worlds it answered True with the premises'
# consistency unchecked, and Unknown not at all (a timeout).
INSIDE = ("Premises:\n∀x ∀y ∀z (In(x, y) ∧ In(y, z) → In(x, z))\nIn(key, box)\nIn(box, room)\n"
          "In(room, house)\n¬In(ann, house)\nConclusion:\n{}\n")


@pytest.mark.parametrize("conclusion, verdict, explanation", [
    ("Happy(ann)", "Unknown", {"attempts": {"conclusion": "counter-model", "negation": "counter-model"}}),
    ("In(key, house)", "True", {"premises": "consistent", "proved": "conclusion"}),
    ("In(ann, box)", "False", {"premises": "consistent", "proved": "negation"}),
])
def test_a_world_settles_what_prover9_would_search_for_until_its_limit(conclusion, verdict, explanation):
    out = execute_task({"solver": "fol", "program": INSIDE.format(conclusion), "limits": {"seconds": 4}})
    assert out.verdict == verdict, out
    assert explanation.items() <= out.explanation.items()
    assert "limit" not in out.explanation


def test_without_a_world_a_contradiction_is_still_found():
    # Every world needs a thing that is both and neither: no world, so Prover9's contradiction search runs.
    program = "Premises:\n∀x (Bird(x) → Flies(x))\nBird(tweety)\n¬Flies(tweety)\nConclusion:\nPenguin(tweety)\n"
    out = execute_task({"solver": "fol", "program": program})
    assert out.error.category == "no_answer" and "inconsistent premises" in out.error.message


def test_sizes_are_tried_smallest_first_until_every_target_has_a_world():
    # Two things other than `a` are needed, one P and one not: the third size tried.
    premises = [Quant("exists", "x", Bin("and", Pred("P", (Var("x"),)), Not(Eq(Var("x"), Const("a"))))),
                Quant("exists", "x", Bin("and", Not(Pred("P", (Var("x"),))), Not(Eq(Var("x"), Const("a")))))]
    outcome, found = world(premises, 5)
    assert outcome == FOUND and found["things"] == ["a", "#1", "#2"]
    assert counter_worlds(premises, {"goal": Pred("Q", (Const("a"),))}, 5) == {"goal": FOUND}


def test_atoms_that_print_alike_are_two_atoms():
    # A unary P of one constant named `"x y", "z w"` and a binary P of two constants print the same
    # (found by a red-team review): the world still has one true and one false.
    unary, binary = parse_formula('P(“x y", "z w”)'), parse_formula('¬P(“x y”, “z w”)')
    outcome, found = world([unary, binary], 5)
    assert outcome == FOUND and len(found["true"]) == len(found["false"]) == 1
