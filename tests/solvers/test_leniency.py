"""What each parser accepts beyond its documented grammar: a located parse error, or a named rule that the
program records (SolverOutcome.lenient) and that --strict refuses when Logic-LM's own parser lacks it.
The programs are written here, construct by construct; none is taken from the released programs."""

from __future__ import annotations

import pytest

from logicpipe.core.errors import ProgramParseError
from logicpipe.solvers import execute_task, solver_rules
from logicpipe.solvers.fol import FOLSolver
from logicpipe.solvers.fol_parser import RULES, parse_formula


@pytest.mark.parametrize("text, column, says", [
    ("∃y, x ∃z :   (mammals and reptiles)", 3, "stray ',' after the quantifier ∃y: write one quantifier per variable, ∃y ∃x"),
    ("∃y ∃z : (Mammal(y) ∧ Reptile(z))", 7, "stray ':' after the quantifier ∃z"),
    ("∀x. Dog(x)", 3, "stray '.' after the quantifier ∀x"),
    ("∀x, y Likes(x, y)", 3, "stray ','"),
    ("Dog(rex) and Cat(tom)", 10, "'and' is an English word, not a connective: write ∧"),
    ("Dog(rex) or Cat(tom)", 10, "write ∨"),
    ("not Dog(rex)", 1, "write ¬"),
    ("Dog(rex) → (Cat(tom) implies Pet(tom))", 22, "write →"),
    ("∃x (Dog(x) ∧ mammals)", 14, "'mammals' is a lower-case word standing for a proposition"),
    ("∀x (College(x) → 27schools)", 18, "'27schools' is a constant standing for a proposition"),
])
def test_what_the_grammar_does_not_say_is_a_located_parse_error(text, column, says):
    with pytest.raises(ProgramParseError) as caught:
        parse_formula(text, 4)
    assert f"line 4, column {column}: " in str(caught.value) and says in str(caught.value)


@pytest.mark.parametrize("text, rule, column", [
    ("∃z (Mammal(x) → Lizard(x))", "free-variable", 12),
    ("dog(rex) ∧ Cat(tom)", "lowercase-predicate", 1),
    ('Member(bob, "Chess Club")', "quoted-constant", 13),
    ("Dog(rex) -> Pet(rex)", "connective-spelling", 10),
    ("Dog(rex) ∧ ~Cat(rex)", "connective-spelling", 12),
    ("all x (Dog(x) → Pet(x))", "word-quantifier", 1),
    ("[Dog(rex) ∧ Pet(rex)]", "brackets", 1),
    ("∀x (Dog(x) → ∃y Owns(y, x))", "nested-quantifier", 14),
    ("(∀x Dog(x))", "nested-quantifier", 2),
    ("∀x ¬∃y Owns(x, y)", "nested-quantifier", 5),
    ("Dog(rex) ∧ ¬¬Pet(rex)", "stacked-negation", 13),
    ("∀x y Likes(x, y)", "variable-list", 4),
    ("Rain → Wet(rex)", "proposition", 1),
    ("Likes(ann, mother(ann))", "function-term", 12),
    ("ann = bob", "equality", 5),
    ("ann ≠ bob", "equality", 5),
    ("Endowment(yale, 42.3billion)", "decimal-constant", 17),
])
def test_each_leniency_is_recorded_with_its_column(text, rule, column):
    rules: dict[str, int] = {}
    parse_formula(text, 1, rules)
    assert rules.get(rule) == column, rules


def test_every_formula_rule_has_a_case_above():
    cases = {rule for _text, rule, _column in _case_params(test_each_leniency_is_recorded_with_its_column)}
    assert set(RULES) - {"text-after-conclusion"} == cases


def _case_params(test):
    return next(mark.args[1] for mark in test.pytestmark if mark.name == "parametrize")


@pytest.mark.parametrize("text", [
    "∀x (Dog(x) → Mammal(x))",
    "¬∀x (Movie(x) → HappyEnding(x))",
    "∀x ∃y (Person(x) → Loves(x, y))",
    "¬¬Dog(rex)",
    "∀x ¬Dog(x)",
    "Dog(rex) ⊕ Lizard(rex)",
    "∃x (Czech(x) ∧ ¬(Author(x, book) ∨ Publish(book, year1946)))",
])
def test_logic_lms_own_grammar_needs_no_rule(text):
    rules: dict[str, int] = {}
    parse_formula(text, 1, rules)
    assert rules == {}


def fol(premises: str, conclusion: str, after: str = "") -> str:
    return f"Predicates:\nDog(x) ::: x is a dog.\nPremises:\n{premises}\nConclusion:\n{conclusion}\n{after}"


def run(text: str, solver: str = "fol", strict: bool = False):
    return execute_task({"solver": solver, "program": text, "limits": {"seconds": 10}, "strict": strict})


def test_a_program_records_each_rule_it_needed_with_its_line():
    text = fol("∀x (Dog(x) → ∃y Owns(y, x))\nDog(rex) -> Pet(rex)\nDog(rex)", "∃y Owns(y, rex)", "Answer: True\n")
    assert FOLSolver().parse(text).lenient == {"nested-quantifier": (4, 14), "connective-spelling": (5, 10),
                                               "text-after-conclusion": (9, None)}
    out = run(text)
    assert out.verdict == "True"
    assert out.lenient == {"nested-quantifier": "line 4, column 14", "connective-spelling": "line 5, column 10",
                           "text-after-conclusion": "line 9"}


def test_a_program_in_logic_lms_grammar_records_none():
    out = run(fol("∀x (Dog(x) → Pet(x))\nDog(rex)", "Pet(rex)"))
    assert out.verdict == "True" and out.lenient is None


def test_strict_refuses_the_first_rule_logic_lm_lacks_and_names_it():
    text = fol("∃z (Mammal(x) → Lizard(x))\nDog(rex) → ∃y Owns(y, rex)\nMammal(rex) -> Dog(rex)\nMammal(rex)",
               "Lizard(rex)")
    out = run(text, strict=True)
    assert out.error is not None and out.error.category == "parse"
    # free-variable (line 4) is Logic-LM's reading too: the first refused is the nested quantifier on line 5.
    assert out.error.message.startswith("line 5, column 12: a quantifier inside parentheses or an operand")
    assert "--strict refuses the rule 'nested-quantifier'" in out.error.message
    assert run(text).verdict == "True"


def test_strict_keeps_the_rules_logic_lm_shares():
    out = run(fol("∃z (Mammal(x) → Lizard(x))\nMammal(rex)", "Lizard(rex)", "Answer: True\n"), strict=True)
    assert out.verdict == "True"
    assert set(out.lenient or {}) == {"free-variable", "text-after-conclusion"}


LP = "Predicates:\nCat($x, bool)\nFacts:\n{facts}\nRules:\nCat($x, True) >>> Pet($x, True)\nQuery:\n{query}\n"


@pytest.mark.parametrize("facts, query, rule, line", [
    ("¬Cat(Tom, False)", "Pet(Tom, True)", "negation-prefix", 4),
    ("not Cat(Tom, False)", "Pet(Tom, True)", "negation-prefix", 4),
    ("Cat(Tom)", "Pet(Tom, True)", "missing-truth-value", 4),
    ("Cat('Tom', True)", "Pet(Tom, True)", "quoted-constant", 4),
    ("Cat(Big Tom, True)", "Pet(Big Tom, True)", "multi-word-constant", 4),
    ("Cat(Tom, True)", "Pet(Tom, bool)", "query-placeholder", 8),
    ("Cat(Tom, True)", "Pet(Tom, True)\nAnswer: True", "text-after-query", 9),
])
def test_lp_leniencies_are_named(facts, query, rule, line):
    out = run(LP.format(facts=facts, query=query), "lp")
    assert out.verdict == "True" and out.lenient == {rule: f"line {line}"}
    refused = run(LP.format(facts=facts, query=query), "lp", strict=True)
    if solver_rules("lp")[rule].logic_lm:
        assert refused.verdict == "True"
    else:
        assert refused.error is not None and f"rule '{rule}'" in refused.error.message
        assert refused.error.message.startswith(f"line {line}: ")


def test_every_lp_rule_has_a_case_above():
    assert {case[2] for case in _case_params(test_lp_leniencies_are_named)} == set(solver_rules("lp"))


CSP = ("{domain}Variables:\nred [IN] {values}\nblue [IN] {values}\nConstraints:\nred < blue\n"
       "Query:\nA) red == 1\nB) blue == 1\n")


@pytest.mark.parametrize("domain, values, lenient", [
    ("Domain:\n1: left\n2: right\n", "[1, 2]", None),
    ("Domain:\n1: left\n2: right\n", "range(1, 3)", {"range-domain": "line 5"}),
    ("", "[1, 2]", {"no-domain-section": "program"}),
])
def test_csp_leniencies_are_named(domain, values, lenient):
    out = run(CSP.format(domain=domain, values=values), "csp")
    assert out.verdict == "A" and out.lenient == lenient


SMT = "{d}\npeople = EnumSort([Ann, Bob])\nrank = Function([people] -> [int])\n{c}\nrank(Ann) < rank(Bob)\n{o}\n" \
      "is_sat(rank(Ann) < rank(Bob)) ::: (A)\n"


def test_smt_header_spelling_is_named_and_strict_refuses_it():
    exact = SMT.format(d="# Declarations", c="# Constraints", o="# Options")
    assert run(exact, "smt").lenient is None
    loose = SMT.format(d="## declarations", c="# Constraints", o="# Options")
    assert run(loose, "smt").verdict == "A" and run(loose, "smt").lenient == {"header-spelling": "line 1"}
    refused = run(loose, "smt", strict=True).error
    assert refused is not None and refused.message.startswith("line 1: ") and "'header-spelling'" in refused.message
