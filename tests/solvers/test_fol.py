import pytest

from logicpipe.errors import PrerequisiteError, ProgramParseError
from logicpipe.solvers import execute_task
from logicpipe.solvers.fol import _Names, to_prover9
from logicpipe.solvers.fol_parser import Bin, Const, Eq, Not, Pred, Quant, Var, parse_formula
from logicpipe.solvers.prover9 import prover9_path

x = Var("x")


def P(name, *args):
    return Pred(name, tuple(args))


@pytest.mark.parametrize("text, tree", [
    ("¬A(ann) ∧ B(ann)", Bin("and", Not(P("A", Const("ann"))), P("B", Const("ann")))),
    ("A(ann) ∨ B(ann) ∧ C(ann)", Bin("or", P("A", Const("ann")), Bin("and", P("B", Const("ann")), P("C", Const("ann"))))),
    ("A(ann) → B(ann) → C(ann)", Bin("imp", P("A", Const("ann")), Bin("imp", P("B", Const("ann")), P("C", Const("ann"))))),
    ("A(ann) ⊕ B(ann) ∨ C(ann)", Bin("xor", P("A", Const("ann")), Bin("or", P("B", Const("ann")), P("C", Const("ann"))))),
    ("A(ann) ↔ B(ann) → C(ann)", Bin("iff", P("A", Const("ann")), Bin("imp", P("B", Const("ann")), P("C", Const("ann"))))),
    ("∀x (A(x) → B(x))", Quant("all", "x", Bin("imp", P("A", x), P("B", x)))),
    ("∀x A(x) → B(x)", Quant("all", "x", Bin("imp", P("A", x), P("B", x)))),
    ("∀x ∃y (L(x, y) ∧ ¬(x = y))",
     Quant("all", "x", Quant("exists", "y", Bin("and", P("L", x, Var("y")), Not(Eq(x, Var("y"))))))),
    ("all x (A(x) -> -B(x) & C(x))", Quant("all", "x", Bin("imp", P("A", x), Bin("and", Not(P("B", x)), P("C", x))))),
    ("exists x (A(x) | B(x))", Quant("exists", "x", Bin("or", P("A", x), P("B", x)))),
    ("A(x) → B(x)", Quant("all", "x", Bin("imp", P("A", x), P("B", x)))),
    ("x ≠ ann", Quant("all", "x", Not(Eq(x, Const("ann"))))),
    ("Rain", P("Rain")),
])
def test_parser_operators_precedence_and_quantifiers(text, tree):
    assert parse_formula(text) == tree


@pytest.mark.parametrize("text, where", [
    ("A(ann) ∧", "column 9"),
    ("∀x (A(x) → B(x)", "expected ')'"),
    ("A(ann) ∈ B", "unexpected character '∈'"),
    ("A(ann) B(ann)", "after a complete formula"),
    ("∀ (A(x))", "expected a name"),
])
def test_parser_reports_position_and_reason(text, where):
    with pytest.raises(ProgramParseError) as caught:
        parse_formula(text, 3)
    assert where in str(caught.value) and "line 3" in str(caught.value)


def test_xor_is_expanded_for_prover9():
    assert to_prover9(parse_formula("A(ann) ⊕ B(bob)"), _Names()) == "-((p_A_1(c_ann)) <-> (p_B_1(c_bob)))"


def problem(premises: str, conclusion: str) -> str:
    return f"Predicates:\nA(x) ::: a\nPremises:\n{premises}\nConclusion:\n{conclusion}\n"


PREMISES = "∀x (Man(x) → Mortal(x)) ::: Men are mortal.\nMan(socrates)\n∀x (God(x) → ¬Mortal(x))\nGod(zeus) ⊕ Man(zeus)"


@pytest.mark.parametrize("conclusion, verdict", [
    ("Mortal(socrates)", "True"),
    ("God(socrates)", "False"),
    ("Mortal(zeus)", "Unknown"),
    ("¬(God(zeus) ∧ Man(zeus))", "True"),
])
def test_verdicts(conclusion, verdict):
    out = execute_task({"solver": "fol", "program": problem(PREMISES, conclusion), "limits": {"seconds": 10}})
    assert out.verdict == verdict
    if verdict != "Unknown":
        assert "Mortal" in out.explanation["proof"] or "God" in out.explanation["proof"]


def test_prover_timeout_is_not_uncertain():
    # Commutativity does not follow from the group axioms; Prover9 searches until its limit.
    premises = ("∀x ∀y ∀z (f(f(x, y), z) = f(x, f(y, z)))\n∀x (f(e1, x) = x)\n∀x ∃y (f(y, x) = e1)")
    out = execute_task({"solver": "fol", "program": problem(premises, "∀x ∀y (f(x, y) = f(y, x))"),
                        "limits": {"seconds": 2}})
    assert out.error.category == "timeout"


def test_missing_binary_is_one_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("LOGICPIPE_PROVER9", str(tmp_path / "nope"))
    with pytest.raises(PrerequisiteError, match="LOGICPIPE_PROVER9"):
        prover9_path()


def test_binary_copy_lives_in_a_private_directory(monkeypatch, tmp_path):
    monkeypatch.delenv("LOGICPIPE_PROVER9", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = prover9_path()
    assert path.parent.stat().st_mode & 0o077 == 0
    assert path.stat().st_mode & 0o700 == 0o700
