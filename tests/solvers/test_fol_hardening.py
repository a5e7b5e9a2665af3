"""Issue 12 reproducers for the FOL solver: absurd sizes, deep nesting, non-ASCII and clashing names,
run-to-run differences in stored proofs."""

import pytest

from logicpipe.core.errors import ProgramParseError
from logicpipe.solvers import execute_task
from logicpipe.solvers.fol import MAX_PROGRAM_CHARS, FOLSolver, _Names, _spell
from logicpipe.solvers.fol_parser import MAX_DEPTH, parse_formula, tokenize


def program(premises: str, conclusion: str) -> str:
    return f"Predicates:\nP(x) ::: x is p.\nPremises:\n{premises}\nConclusion:\n{conclusion}\n"


def run(text: str) -> dict:
    return execute_task({"solver": "fol", "program": text, "limits": {"seconds": 10}})


def test_an_absurdly_large_program_is_rejected_up_front():
    huge = program("all x " * 200_000 + "P(x)", "P(a)")  # 1.2 MB: once 3 minutes in the tokenizer
    with pytest.raises(ProgramParseError, match=f"the limit is {MAX_PROGRAM_CHARS}"):
        FOLSolver().parse(huge)


def test_repeated_word_quantifiers_tokenize_in_one_pass():
    # Just under the cap; the word-quantifier look-ahead once copied the rest of the line per token.
    text = "all x " * 30_000 + "P(x)"
    tokens = tokenize(text, 1)
    assert len(tokens) == 60_000 + 5 and tokens[0][0] == "ALL" and tokens[1] == ("NAME", "x", 5)


@pytest.mark.parametrize("text", [
    "(" * 5000 + "P(a)" + ")" * 5000,
    "¬" * 50_000 + "P(a)",
    "P(a) → " * 5000 + "P(a)",
    "all x " * 5000 + "P(x)",
    "∀x " * 5000 + "P(x)",
    "P(" + "f(" * 5000 + "a" + ")" * 5001,
])
def test_deep_nesting_is_a_parse_error_not_a_recursion_error(text):
    with pytest.raises(ProgramParseError, match="nests too deeply") as caught:
        parse_formula(text, 4)
    # The message quotes the line around the column, not the whole 100 KB line.
    assert "line 4, column" in str(caught.value) and len(str(caught.value)) < 400


def test_a_long_chain_of_operators_is_bounded_too():
    with pytest.raises(ProgramParseError, match=f"more than {MAX_DEPTH} operators deep"):
        parse_formula(" ∧ ".join(["P(a)"] * 5000), 2)
    assert parse_formula(" ∧ ".join(["P(a)"] * 100)) is not None  # a long but sane premise still parses


def test_deeply_nested_programs_end_as_parse_records():
    out = run(program("(" * 3000 + "P(a)" + ")" * 3000, "P(a)"))
    assert out.error.category == "parse" and "nests too deeply" in out.error.message


def test_non_ascii_names_reach_prover9_and_come_back_in_the_proof():
    out = run(program("∀x (Singer(x) → Famous(x))\nSinger(beyoncé)", "Famous(beyoncé)"))
    assert out.verdict == "True"
    assert out.explanation["proof"].splitlines()[-5:] == [
        "3 Singer(beyoncé).  [assumption].",
        "4 -Singer(x) | Famous(x).  [clausify(1)].",
        "5 Famous(beyoncé).  [resolve(3,a,4,a)].",
        "6 -Famous(beyoncé).  [deny(2)].",
        "7 $F.  [resolve(5,a,6,a)].",
    ]


def test_names_that_spelled_alike_stay_distinct():
    # a'b and a_27_b were both sent as c_a_27_b, so this Unknown came out True.
    assert run(program("P(a'b)", "P(a_27_b)")).verdict == "Unknown"
    assert run(program("P(a'b)", "P(a'b)")).verdict == "True"


def test_symbol_spelling_is_injective_ascii():
    names = ["a'b", "a_27_b", "a_b", "a__b", "ab", "beyoncé", "beyonc_e9_", "A_1", "A"]
    spelled = {_spell(name) for name in names}
    assert len(spelled) == len(names) and all(token.isascii() for token in spelled)
    spell = _Names()
    assert spell("p", "A", 1) != spell("p", "A_1") and spell("c", "ab") != spell("p", "ab")


def test_two_runs_store_identical_proofs():
    text = program("∀x (P(x) → Q(x))\nP(a)\n∀x (Q(x) → R(x))", "R(a)")
    first, second = run(text), run(text)
    assert first == second
    assert "seconds" not in first.explanation["proof"] and first.explanation["proof"].startswith("% Length")
