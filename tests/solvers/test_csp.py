import sys

import pytest

from logicpipe.core.errors import ProgramCheckError, ProgramExecutionError, ProgramParseError
from logicpipe.solvers import Limits, execute_task, get_solver


def pair(error):
    """(category, message) of a typed error, for comparing with a literal."""
    return (error.category, error.message) if error is not None else None

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
        get_solver("csp").parse(GOOD.replace("red < blue", "red < (blue"))
    assert caught.value.line == 9 and caught.value.column is not None


def test_unsatisfiable_constraints_give_no_answer():
    out = execute_task({"solver": "csp", "program": GOOD.replace("green == 3", "green == 3\nred == 3")})
    assert pair(out.error) == ("no_answer", "inconsistent premises: the constraints have no solution")


SMALL = """Variables:
a [IN] {domain}
b [IN] [1, 2, 3]
Constraints:
{constraint}
Query:
A) a == 1
B) b == 2
"""


def small(constraint: str = "a != b", domain: str = "[1, 2, 3]") -> dict:
    return execute_task({"solver": "csp", "program": SMALL.format(constraint=constraint, domain=domain)})


@pytest.mark.parametrize("domain, message", [
    ("['\\ud800', 'x']", "line 2, column 2: string '\\ud800' is not valid Unicode (a lone surrogate escape)"),
    ("[0x" + "f" * 3600 + ", 1]", "line 2, column 2: integer 0xfffffffffffffffffff... is out of range"),
    ("[red, blue]", "line 2: domain values must be constants: quote names, as in ['red', 'blue']"),
    ("[]", "line 2: a domain must be a non-empty list of constants or range(a, b)"),
])
def test_domains_that_could_not_be_recorded_or_enumerated_are_parse_errors(domain, message):
    kind, text = pair(small(domain=domain).error)
    assert kind == "parse" and text.startswith(message)


# What no context-free grammar can rule out (names, values) is a check error: Logic-LM meets these when
# it runs the program, so they are execution errors, with the line and the reason all the same.
@pytest.mark.parametrize("program, message", [
    (GOOD.replace("red < blue", "red < purple"), "line 9, column 7: unknown variable 'purple' in 'red < purple'"),
    (GOOD.replace("AllDifferentConstraint([red, blue, green])", "AllDifferentConstraint([red, grey])"),
     "unknown variable 'grey' in AllDifferentConstraint"),
    (GOOD.replace("Constraints:", "red [IN] [4]\nConstraints:"), "variable 'red' declared twice"),
    (SMALL.format(constraint="a != b", domain="range(1, 5, 0)"), "line 2: a range's step must not be 0"),
    (SMALL.format(constraint="a != b", domain="range(5, 1)"), "line 2: the domain is empty in 'range(5, 1)'"),
])
def test_undeclared_names_and_empty_domains_are_check_errors_that_count_as_execution(program, message):
    with pytest.raises(ProgramCheckError) as caught:
        get_solver("csp").parse(program)
    assert message in str(caught.value)
    assert isinstance(caught.value, ProgramExecutionError) and not isinstance(caught.value, ProgramParseError)
    error = execute_task({"solver": "csp", "program": program}).error
    assert error.category == "execution" and message in error.message


def test_explanation_round_trips_through_a_solve_record():
    from logicpipe.core.records import SolveRecord

    out = small(constraint="b == 3", domain="[9223372036854775807, 'x', True]")
    assert out.error.category == "no_answer"
    record = SolveRecord(id="p", dataset="logicaldeduction", solver="csp", explanation=out.explanation)
    again = SolveRecord.model_validate_json(record.model_dump_json())
    assert again.explanation == out.explanation
    assert {s["a"] for s in again.explanation["sample"]} == {9223372036854775807, "x", True}


@pytest.mark.parametrize("constraint, kind, message", [
    ("AllDifferentConstraint([a, b]) and a == 1", "parse",
     "line 5, column 1: AllDifferentConstraint([...]) must stand alone on its own line"),
    ("min() == 1", "parse", "line 5, column 1: min takes two or more values, or one non-empty list"),
    ("max(a) == 1", "parse", "line 5, column 1: max takes two or more values, or one non-empty list"),
    ("abs(a, b) == 1", "parse", "line 5, column 1: abs takes one argument"),
    ("a == " + " + ".join(["b"] * 2000), "parse", "line 5, column 6: expression nests more than 100 levels"),
    ("a // (b - b) == 1", "execution", "line 5: cannot evaluate 'a // (b - b)': division by zero"),
    ("a % (b - b) == 1", "execution", "line 5: cannot evaluate 'a % (b - b)': division by zero"),
    ("a < 'x'", "execution",
     "line 5: cannot evaluate \"a < 'x'\": '<' not supported between instances of 'int' and 'str'"),
    ("-'x' == a", "execution", "line 5: cannot evaluate \"-'x'\": bad operand type for unary -: 'str'"),
    ("a in 3", "execution", "line 5: cannot evaluate 'a in 3': argument of type 'int' is not iterable"),
    ("a | b", "parse", "line 5, column 1: '|' is not allowed here (write 'or')"),
])
def test_each_construct_that_raised_a_python_exception_is_a_typed_error(constraint, kind, message):
    out = small(constraint=constraint)
    assert out.error.category == kind
    assert out.error.message.startswith(message)


def test_an_option_that_fails_at_run_time_names_its_line():
    text = SMALL.format(constraint="a != b", domain="[1, 2, 3]").replace("B) b == 2", "B) b // (a - a) == 2")
    out = execute_task({"solver": "csp", "program": text})
    assert pair(out.error) == ("execution", "line 8: cannot evaluate 'b // (a - a)': division by zero")


def test_a_constraint_that_is_always_false_is_an_inconsistent_premise():
    assert pair(small(constraint="1 == 2").error) == (
        "no_answer", "inconsistent premises: constraint '1 == 2' on line 5 is always false")


def test_a_missing_package_is_a_prerequisite_error_with_the_install_command(monkeypatch):
    from logicpipe.core.errors import PrerequisiteError

    monkeypatch.setitem(sys.modules, "constraint", None)
    with pytest.raises(PrerequisiteError, match="pip install python-constraint2"):
        get_solver("csp").check()
