"""The converter of FOLIO-style annotations into logicpipe's FOL program syntax (logicpipe/data/gold.py),
on small examples written here, one construct each; the programs are then run by the FOL solver."""

import pytest

from logicpipe.core.errors import ProgramParseError
from logicpipe.data.gold import Annotated, annotation_errors, folio_program, is_gold
from logicpipe.solvers import get_solver
from logicpipe.solvers.base import Limits


def example(formulas, conclusion, sentences=None, said="The conclusion.", label="True"):
    sentences = sentences if sentences is not None else [f"Sentence {i + 1}." for i in range(len(formulas))]
    return Annotated(sentences, formulas, said, conclusion, label)


def sections(program: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    current = None
    for line in program.splitlines():
        if line.endswith(":") and line[:-1] in ("Predicates", "Premises", "Conclusion"):
            current = line[:-1]
            found[current] = []
        elif current is not None and line:
            found[current].append(line)
    return found


def verdict(program: str) -> str | None:
    solver = get_solver("fol")
    return solver.execute(solver.parse(program), Limits(10)).verdict


def test_each_formula_keeps_its_sentence_and_the_sections_come_in_order():
    program = folio_program(example(["∀x (Cat(x) → Animal(x))", "Cat(tom)"], "Animal(tom)",
                                    said="Tom is an animal."))
    assert list(sections(program)) == ["Predicates", "Premises", "Conclusion"]
    assert sections(program)["Premises"] == ["∀x (Cat(x) → Animal(x)) ::: Sentence 1.", "Cat(tom) ::: Sentence 2."]
    assert sections(program)["Conclusion"] == ["Animal(tom) ::: Tom is an animal."]
    assert verdict(program) == "True"


def test_predicates_are_declared_with_their_arity_once_each_in_order_of_use():
    program = folio_program(example(
        ["∀x ∀y (Likes(x, y) → ¬Hates(x, y))", "∃x (Dog(x) ∧ Likes(x, rex))", "(Dog(rex) ⊕ Cat(rex))",
         "Owner(rex) = ann", "Loud(voice(rex))"], "¬Hates(rex, rex)"))
    # Equality and function terms are no predicates; a nested predicate is found under ¬, ∀, ∃ and ⊕.
    assert sections(program)["Predicates"] == ["Likes(x, y)", "Hates(x, y)", "Dog(x)", "Cat(x)", "Loud(x)"]


def test_a_formula_written_over_several_lines_is_joined_onto_one():
    program = folio_program(example(["∀x (Cat(x)\n  → Animal(x))", "Cat(tom)"], "Animal(tom)",
                                    sentences=["All cats\nare animals.", "Tom is a cat."]))
    assert sections(program)["Premises"][0] == "∀x (Cat(x) → Animal(x)) ::: All cats are animals."
    assert verdict(program) == "True"


def test_sentences_are_left_out_when_they_do_not_pair_with_the_formulas():
    # Two sentences for three formulas: pairing them would put a sentence beside the wrong formula.
    program = folio_program(example(["P(a)", "P(a) → Q(a)", "Q(a) → R(a)"], "¬R(a)", sentences=["One.", "Two."]))
    assert sections(program)["Premises"] == ["P(a)", "P(a) → Q(a)", "Q(a) → R(a)"]
    assert verdict(program) == "False"


def test_an_annotation_that_does_not_parse_is_kept_and_the_solver_says_why():
    broken = "(Spill(a) ∧ Child(a)) ∨ ¬Spill(a) ∧ ¬Child(a))"  # one ')' too many
    program = folio_program(example(["Spill(a)", broken], "Child(a)"))
    assert f"{broken} ::: Sentence 2." in sections(program)["Premises"]
    with pytest.raises(ProgramParseError, match=r"unexpected '\)' after a complete formula"):
        get_solver("fol").parse(program)
    assert annotation_errors(example(["Spill(a)", broken], "Child(a)")) == [
        f"premise 2 {broken!r}: unexpected ')' after a complete formula at column 46"]


def test_the_annotation_errors_name_each_premise_and_the_conclusion():
    found = annotation_errors(example(["P(a)", "Q(a) ⟷ P(a)", "R(a,, b)"], "", said="Nothing."))
    assert [f.split(" ", 2)[:2] for f in found] == [["premise", "2"], ["premise", "3"], ["conclusion:", "no"]]
    assert "unexpected character '⟷'" in found[0]


def test_no_conclusion_is_a_program_without_one_which_does_not_parse():
    program = folio_program(example(["P(a)"], "   "))
    with pytest.raises(ProgramParseError, match="missing 'Conclusion:'"):
        get_solver("fol").parse(program)


def test_only_the_bare_word_gold_names_the_gold_programs():
    assert is_gold("gold") and not is_gold("gold.json") and not is_gold("/tmp/gold/x.json") and not is_gold(None)
