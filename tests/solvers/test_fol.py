import re

import pytest

from logicpipe.core.errors import PrerequisiteError, ProgramParseError
from logicpipe.solvers import execute_task
from logicpipe.solvers.fol import FOLSolver, _decide, _Names, to_prover9
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


def solve(premises: str, conclusion: str, seconds: float = 10) -> dict:
    return execute_task({"solver": "fol", "program": problem(premises, conclusion), "limits": {"seconds": seconds}})


@pytest.mark.parametrize("conclusion, verdict, proved", [
    ("Mortal(socrates)", "True", "conclusion"),
    ("God(socrates)", "False", "negation"),
    ("Mortal(zeus)", "Unknown", None),
    ("¬(God(zeus) ∧ Man(zeus))", "True", "conclusion"),
])
def test_verdicts(conclusion, verdict, proved):
    out = solve(PREMISES, conclusion)
    assert out.verdict == verdict
    explanation = out.explanation
    if proved is None:
        # A world of Socrates and Zeus where Zeus is a god shows both unprovable, before any search.
        assert explanation == {"attempts": {"conclusion": "counter-model", "negation": "counter-model"}}
    else:
        assert explanation["proved"] == proved and explanation["attempts"] == {proved: "proved"}
        assert explanation["premises"] == "consistent"
        assert re.fullmatch(r"\d+ \$F\.  \[resolve\(\d+,a,\d+,a\)\]\.", explanation["proof"].splitlines()[-1])


def test_proof_names_the_premises_and_steps_used():
    proof = solve(PREMISES, "Mortal(socrates)").explanation["proof"]
    assert proof.splitlines() == [
        "% Length of proof is 7.",
        "% Level of proof is 3.",
        "% Maximum clause weight is 0.000.",
        "% Given clauses 0.",
        "",
        "1 (all x (Man(x) -> Mortal(x))) # label(non_clause).  [assumption].",
        "4 Mortal(socrates) # label(non_clause) # label(goal).  [goal].",
        "5 Man(socrates).  [assumption].",
        "6 -Man(x) | Mortal(x).  [clausify(1)].",
        "11 Mortal(socrates).  [resolve(5,a,6,a)].",
        "12 -Mortal(socrates).  [deny(4)].",
        "13 $F.  [resolve(11,a,12,a)].",
    ]


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


# Issue 11: output the model was not asked for.

def test_prose_after_the_conclusion_is_ignored_and_noted():
    program = problem(PREMISES, "Mortal(socrates)\nAnswer: True\nThe conclusion follows because Socrates is a man.")
    out = execute_task({"solver": "fol", "program": program})
    assert out.verdict == "True"
    assert out.explanation["ignored"] == [
        "ignored 2 lines after the conclusion: 'Answer: True', "
        "'The conclusion follows because Socrates is a man.'"]


def test_a_malformed_conclusion_line_is_still_a_parse_error():
    with pytest.raises(ProgramParseError, match="line 9"):
        FOLSolver().parse(problem(PREMISES, "Answer: True\nMortal(socrates)"))


def test_a_clean_program_has_no_ignored_notes():
    assert "ignored" not in solve(PREMISES, "Mortal(socrates)").explanation


@pytest.mark.parametrize("text, constant", [
    ("Time(show, 8pm)", "8pm"),
    ("Endowment(yale, 42.3billion)", "42.3billion"),
    ("Organized(yale, 27)", "27"),
    ('Member(bob, "Multi Word Club")', '"Multi Word Club"'),
    ("Member(bob, “Multi Word Club”)", '"Multi Word Club"'),
    ('Member(bob, "ann")', "ann"),
])
def test_digit_and_quoted_constants(text, constant):
    assert parse_formula(text).args[1] == Const(constant)


def test_digit_and_quoted_constants_reach_the_prover():
    premises = 'Endowment(yale, 42.3billion)\nTime(show, 8pm)\nMember(bob, "Multi Word Club")'
    assert solve(premises, 'Endowment(yale, 42.3billion) ∧ Member(bob, "Multi Word Club")').verdict == "True"
    assert solve(premises, "Time(show, 9pm)").verdict == "Unknown"
    assert solve(premises, "Member(bob, Multi)").verdict == "Unknown"


@pytest.mark.parametrize("text, reason", [
    ('P("")', "empty quoted name"),
    ('"Multi Word" ∧ P(a)', "is a constant, not a formula"),
    ("Endowment(yale, 42.)", "expected '\\)'"),
])
def test_bad_constants_are_parse_errors(text, reason):
    with pytest.raises(ProgramParseError, match=reason):
        parse_formula(text)


def test_inconsistent_premises_give_no_answer():
    premises = "∀x (Bird(x) → Flies(x))\nBird(tweety)\n¬Flies(tweety)"
    out = solve(premises, "Penguin(tweety)")
    category, message = out.error.category, out.error.message
    assert category == "no_answer" and message.startswith("inconsistent premises:")
    proof = out.explanation["proof"]
    assert "Bird(tweety).  [assumption]." in proof and "-Flies(tweety).  [assumption]." in proof
    assert "[goal]" not in proof and "deny" not in proof


@pytest.mark.parametrize("status, complete, outcome", [
    ({"conclusion": "proved"}, False, None),  # consistency not yet known
    ({"conclusion": "proved", "contradiction": "exhausted"}, False, "True"),
    ({"conclusion": "proved", "negation": "exhausted"}, False, "True"),
    ({"negation": "proved", "contradiction": "exhausted"}, False, "False"),
    ({"contradiction": "proved"}, False, "inconsistent"),
    ({"conclusion": "exhausted", "negation": "exhausted"}, False, "Unknown"),
    ({"conclusion": "exhausted", "contradiction": "exhausted"}, False, None),
    ({"conclusion": "exhausted", "negation": "limit", "contradiction": "exhausted"}, True, "timeout"),
    ({"conclusion": "limit", "negation": "limit", "contradiction": "limit"}, True, "timeout"),
    ({"conclusion": "proved", "negation": "limit", "contradiction": "limit"}, True, "True"),
    ({"conclusion": "proved", "negation": "proved", "contradiction": "limit"}, True, "inconsistent"),
    ({"conclusion": "proved", "negation": "counter-model"}, False, "True"),  # a world shows them consistent
    ({"negation": "proved", "conclusion": "counter-model"}, False, "False"),
    ({"conclusion": "counter-model", "negation": "counter-model"}, False, "Unknown"),
    ({"conclusion": "counter-model", "negation": "exhausted"}, False, "Unknown"),
    ({"conclusion": "counter-model", "negation": "limit"}, True, "timeout"),
])
def test_decision_waits_for_what_settles_the_outcome(status, complete, outcome):
    assert _decide(status, complete) == outcome


def test_answer_from_an_exhausted_budget_says_so():
    # Commutative groups keep Prover9 busy until its limit in the negation and contradiction searches.
    premises = ("∀x ∀y ∀z (f(f(x, y), z) = f(x, f(y, z)))\n∀x (f(e1, x) = x)\n∀x ∃y (f(y, x) = e1)\n"
                "∀x ∀y (f(x, y) = f(y, x))\nMan(socrates)\n∀x (Man(x) → Mortal(x))")
    out = solve(premises, "Mortal(socrates)", seconds=2)
    assert out.verdict == "True"
    assert out.explanation["limit"] == "the premises' consistency is unchecked: the other searches hit their 1 s limit"
    assert "premises" not in out.explanation
