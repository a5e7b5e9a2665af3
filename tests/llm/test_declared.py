"""Two-phase decoding (llm/declared.py): the first grammar ends at the declarations, the second fixes
them and admits only declared names, functions at their arity and scopes over declared sorts. The
recogniser (tests/llm/gbnf.py) decides membership; the parsers and solvers say what runs."""

import random

import pytest

from logicpipe.core.errors import ProgramExecutionError
from logicpipe.llm.declared import first_grammar, literal, next_grammar, smt_declarations
from logicpipe.llm.grammars import load
from logicpipe.solvers import get_solver
from logicpipe.solvers.base import Limits
from tests.llm.gbnf import Recogniser, sample

CSP_DECLARED = "Domain:\n1: left\nVariables:\nowl [IN] [1, 2, 3]\nrobin [IN] [1, 2, 3]\nConstraints:\n"
CSP_REST = "owl < robin\nrobin == 2\nQuery:\nA) owl == 1\nB) robin == 1\n"
SMT_DECLARED = ("# Declarations\npeople = EnumSort([Ann, Bob, Cal])\nslots = IntSort([1, 2, 3])\n"
                "slot = Function([people] -> [slots])\n# Constraints\n")
SMT_REST = ("Distinct([p:people], slot(p))\nslot(Ann) < slot(Bob)\n# Options\n"
            "is_valid(slot(Ann) < 3) ::: (A)\nis_valid(slot(Cal) == 3) ::: (B)\n")


SMT_SORTS = SMT_DECLARED[:SMT_DECLARED.index("[people] ->")]


@pytest.fixture(scope="module")
def grammars():
    return {"csp1": Recogniser(first_grammar("csp", 512)), "smt1": Recogniser(first_grammar("smt", 512)),
            "csp2": Recogniser(next_grammar("csp", 512, CSP_DECLARED)),
            "smt-functions": Recogniser(next_grammar("smt", 512, SMT_SORTS)),
            "smt2": Recogniser(next_grammar("smt", 512, SMT_DECLARED))}


def test_the_first_phase_ends_at_the_constraints_header_or_the_first_function(grammars):
    assert grammars["csp1"].accepts(CSP_DECLARED) and not grammars["csp1"].accepts(CSP_DECLARED + CSP_REST)
    assert SMT_SORTS.endswith("slot = Function(") and grammars["smt1"].accepts(SMT_SORTS)
    no_functions = SMT_DECLARED.replace("slot = Function([people] -> [slots])\n", "")
    assert grammars["smt1"].accepts(no_functions)
    assert not grammars["smt1"].accepts(SMT_DECLARED) and not grammars["smt1"].accepts(no_functions + SMT_REST)
    # The phases together are the one-phase decoding grammar's language.
    for language, text in (("csp", CSP_DECLARED + CSP_REST), ("smt", SMT_DECLARED + SMT_REST)):
        assert Recogniser(load(language, decoding=True, max_tokens=512)).accepts(text)


def test_functions_range_over_declared_sorts(grammars):
    assert grammars["smt-functions"].accepts(SMT_DECLARED)
    assert grammars["smt-functions"].accepts(SMT_SORTS + "[people, people] -> [bool])\n# Constraints\n")
    assert not grammars["smt-functions"].accepts(SMT_SORTS + "[people] -> [rooms])\n# Constraints\n")
    assert not grammars["smt-functions"].accepts(SMT_DECLARED.replace("# Declarations", "# Declared"))


def test_the_second_phase_keeps_the_first_and_takes_declared_names_only(grammars):
    assert grammars["csp2"].accepts(CSP_DECLARED + CSP_REST)
    assert not grammars["csp2"].accepts(CSP_DECLARED.replace("owl", "ant", 1) + CSP_REST)
    for undeclared in ("owl < wren\n", "AllDifferentConstraint([owl, wren])\n"):
        assert not grammars["csp2"].accepts(CSP_DECLARED + undeclared + "Query:\nA) owl == 1\n")
    assert not grammars["csp2"].accepts(CSP_DECLARED + "owl < robin\nQuery:\nA) wren == 1\n")


@pytest.mark.parametrize("constraint, ok", [
    ("slot(Ann) < slot(Bob)", True),
    ("ForAll([p:people], slot(p) > 0)", True),
    ("Implies(slot(Ann) == 1, slot(Bob) == 2)", True),
    ("slot(Dan) < 2", False),  # Dan is no member
    ("place(Ann) < 2", False),  # place is no function
    ("slot(Ann, Bob) < 2", False),  # slot takes one argument
    ("Implies(slot(Ann) == 1)", False),  # Implies takes two
    ("ForAll([p:rooms], slot(p) > 0)", False),  # no sort rooms
    ("slot[0] == 1", False),  # no subscripts
    ("slot(p) > 0", False),  # p is bound by no scope
    ("Count([p:people], slot(p) > 1) == 2", True),
    ("Exists([p:people], ForAll([p:people], slot(p) >= 1))", True),
    ("ForAll([s:slots], Count([p:people], slot(p) == s) <= 1)", True),
    ("ForAll([s:slots], slot(p) == s)", False),  # p is bound by no scope around it
    ("ForAll([p:people, s:slots], slot(p) == s)", False),  # a scope ranges over one sort
    ("ForAll([q:people], slot(q) > 0)", False),  # a person's variable starts with p
    ("Ann != Bob", True),
    ("Ann < Bob", False),  # order is for numbers
    ("slot(Ann) == Bob", False),  # a number and a person
    ("slot(Ann)", False),  # a constraint is a condition
    ("And(slot(Ann) == 1, Not(slot(Bob) == 1))", True),
    ("abs(abs(slot(Ann))) > 0", True),
    ("abs(abs(abs(slot(Ann)))) > 0", False),  # calls nest three deep at most
])
def test_smt_names_arities_sorts_and_scopes_are_the_declared_ones(grammars, constraint, ok):
    assert grammars["smt2"].accepts(SMT_DECLARED + constraint + "\n# Options\nis_sat(slot(Ann) == 2)\n") is ok


def test_every_program_of_the_next_grammar_here_runs_in_the_solvers(grammars):
    """The oracle for "executes": the solvers themselves, on the programs both grammars accept."""
    for language, text in (("csp", CSP_DECLARED + CSP_REST), ("smt", SMT_DECLARED + SMT_REST)):
        assert grammars[f"{language}2"].accepts(text)
        solver = get_solver(language)
        result = solver.execute(solver.parse(text), Limits())
        assert result.verdict == "A", result


def test_declarations_are_read_as_the_solver_reads_them():
    declared = smt_declarations(SMT_DECLARED + "meets = Function([people, people] -> [bool]) ::: who meets whom\n")
    assert declared.sorts == {"people": ("EnumSort", ["Ann", "Bob", "Cal"]), "slots": ("IntSort", ["1", "2", "3"])}
    assert declared.functions == {"slot": ["people", "slots"], "meets": ["people", "people", "bool"]}


OWN_DECLARATIONS = [
    SMT_DECLARED,
    "# Declarations\nrooms = EnumSort([R1, R2])\nguests = EnumSort([Kim, Lee, Max])\nhours = IntSort([a, b])\n"
    "stay = Function([guests] -> [rooms])\nlikes = Function([guests, rooms] -> [bool])\n"
    "cost = Function([rooms] -> [int])\n# Constraints\n",
    "# Declarations\nteams = EnumSort([Red, Blue])\nranks = EnumSort([1, 2, 3, 4])\n"
    "front = EnumSort([Red])\nrank = Function([teams] -> [ranks])\n# Constraints\n",
]


@pytest.mark.parametrize("declared", OWN_DECLARATIONS)
def test_every_sampled_smt_program_of_the_last_phase_runs_in_z3(declared):
    """The oracle is the SMT solver: random programs of the typed grammar parse and run (an answer, or
    no single answer), never an execution error."""
    grammar = next_grammar("smt", 512, declared)
    solver, rng = get_solver("smt"), random.Random(declared)
    for _ in range(25):
        text = sample(grammar, rng, depth=14)
        result = solver.execute(solver.parse(text), Limits(seconds=5))
        assert result.verdict is not None or result.no_answer, text


def test_every_sampled_csp_program_of_the_last_phase_names_declared_variables_only():
    grammar = next_grammar("csp", 512, CSP_DECLARED)
    solver, rng = get_solver("csp"), random.Random(5)
    for _ in range(25):
        text = sample(grammar, rng, depth=14)
        try:
            solver.execute(solver.parse(text), Limits(seconds=5))
        except ProgramExecutionError as error:
            assert "unknown variable" not in str(error) and "declared" not in str(error), text


def test_a_repeated_declaration_is_left_out_of_the_fixed_start():
    twice = CSP_DECLARED.replace("robin [IN]", "owl [IN] [4]\nrobin [IN]")
    second = Recogniser(next_grammar("csp", 512, twice))
    assert second.accepts(CSP_DECLARED + CSP_REST) and not second.accepts(twice + CSP_REST)


def test_the_rest_gets_no_more_lines_than_the_tokens_left_hold():
    long = "# Declarations\npeople = EnumSort([Ann, Bob])\n" + "".join(
        f"a_function_name_of_twenty_{i} = Function([people] -> [people])\n" for i in range(6)) + "# Constraints\n"
    rest = [line for line in next_grammar("smt", 512, long).splitlines() if line.startswith("smt-rest ::= ")]
    assert len(rest) == 1 and "{0,3}" in rest[0]
    assert "{0,4}" in next(line for line in next_grammar("smt", 512, SMT_DECLARED).splitlines()
                           if line.startswith("smt-rest ::= "))


def test_a_first_phase_cut_short_goes_on_as_the_reply():
    assert next_grammar("csp", 512, "Variables:\nowl [IN] [1, 2") is None
    assert next_grammar("smt", 512, "# Declarations\n# Constraints\n") is None


def test_literal_escapes_what_gbnf_reads_as_syntax():
    text = 'a "quoted" \\ back\nslash\t\x01'
    assert Recogniser(f"root ::= {literal(text)}\n").accepts(text.replace("\x01", "")) is False
    assert Recogniser(f"root ::= {literal(text[:-1])}\n").accepts(text[:-1])
