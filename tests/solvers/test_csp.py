import pytest

from logicpipe.errors import ProgramParseError
from logicpipe.solvers import Limits, execute_task, get_solver

GOOD = """Domain:
1: leftmost
3: rightmost
Variables:
red [IN] [1, 2, 3]
blue [IN] [1, 2, 3]
green [IN] [1, 2, 3]
Constraints:
red < blue ::: red left of blue
green == 3
AllDifferentConstraint([red, blue, green])
Query:
A) red == 2
B) blue == 2
C) abs(red - blue) == 1 and green > red
"""


def test_good_program_entails_option_true_in_every_solution():
    solver = get_solver("csp")
    result = solver.execute(solver.parse(GOOD), Limits())
    assert result.verdict == "B"
    assert result.explanation["solutions"] == 1


def test_option_holding_in_only_some_solutions_is_not_entailed():
    text = GOOD.replace("green == 3\n", "")
    result = execute_task({"solver": "csp", "program": text.replace("B) blue == 2", "B) blue == 3")})
    # red<blue with all different over 3 slots leaves several solutions; no option holds in all.
    assert result.error.category == "no_answer"


@pytest.mark.parametrize("bad, reason", [
    (GOOD.replace("red < blue", "red < purple"), "unknown variable 'purple'"),
    (GOOD.replace("red < blue", "red.__class__"), "attribute access"),
    (GOOD.replace("red < blue", "red <"), "syntax error"),
    (GOOD.replace("Query:\n", ""), "missing section 'Query:'"),
    (GOOD.replace("Constraints:", "Rules:"), "missing section 'Constraints:'"),
    (GOOD.replace("[1, 2, 3]\nblue", "one two\nblue"), "line 5, column 5: syntax error"),
    (GOOD.replace("A) red == 2", "A) __import__('os')"), "unknown function '__import__'"),
    (GOOD.replace("A) red == 2", "A) (lambda: 1)()"), "lambda"),
])
def test_bad_programs_are_parse_errors_with_a_useful_message(bad, reason):
    with pytest.raises(ProgramParseError) as caught:
        get_solver("csp").parse(bad)
    assert reason in str(caught.value)
    out = execute_task({"solver": "csp", "program": bad})
    assert out.error.category == "parse"


def test_parse_error_names_line_and_column():
    with pytest.raises(ProgramParseError) as caught:
        get_solver("csp").parse(GOOD.replace("red < blue", "red < purple"))
    assert caught.value.line == 9 and caught.value.column == 7


def test_unsatisfiable_constraints_give_no_answer():
    out = execute_task({"solver": "csp", "program": GOOD.replace("green == 3", "green == 3\nred == 3")})
    assert (out.error.category, out.error.message) == ("no_answer", "the constraints have no solution")
