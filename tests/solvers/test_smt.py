import pytest

from logicpipe.errors import ProgramParseError
from logicpipe.solvers import execute_task, get_solver

BASE = """# Declarations
people = EnumSort([Ann, Bob, Cid])
men = EnumSort([Bob, Cid])
slots = EnumSort([1, 2, 3])
slot = Function([people] -> [slots])
likes = Function([people, people] -> [bool])

# Constraints
Distinct([p:people], slot(p)) ::: everyone in a different slot
slot(Ann) == 1 ::: Ann first
ForAll([m:men], slot(m) > 1)
Count([p:people], slot(p) >= 2) == 2
Implies(slot(Bob) == 2, likes(Bob, Ann))
And(Exists([p:people], likes(p, Ann)), Not(likes(Ann, Ann)))
slot(Bob) < slot(Cid)

# Options
Question ::: Which one must be true?
{options}
"""


def run(options: str, base: str = BASE) -> dict:
    return execute_task({"solver": "smt", "program": base.format(options=options)})


def test_is_valid_picks_the_entailed_option():
    out = run("is_valid(slot(Cid) == 2) ::: (A)\nis_valid(slot(Bob) == 2) ::: (B)\nis_valid(slot(Cid) == 3) ::: (C)")
    assert out.verdict == "B"
    assert out.explanation["options"] == {"A": False, "B": True, "C": True}


def test_is_sat_is_unsat_is_exception_and_accurate_list():
    out = run("is_unsat(slot(Bob) == 2) ::: (A)\nis_exception(is_sat(likes(Bob, Ann))) ::: (B)\n"
              "is_accurate_list([slot(Bob) == 2, slot(Cid) == 3]) ::: (C)")
    assert out.verdict == "C"
    out = run("is_sat(likes(Cid, Cid)) ::: (A)")
    assert out.verdict == "A"


def test_integer_lists_if_abs_sum_and_chained_comparison():
    base = """# Declarations
days = EnumSort([1, 2, 3, 4])
tasks = EnumSort([wash, cook])
day = Function([tasks] -> [days])
# Constraints
Abs(day(wash) - day(cook)) == 2
1 < day(wash) < 4
If(day(wash) == 2, day(cook) == 4, True)
Sum([day(t) for_ in tasks]) == 6 if False else True
# Options
is_valid(day(cook) == 4) ::: (A)
"""
    assert execute_task({"solver": "smt", "program": base}).error.category == "parse"
    good = base.replace("Sum([day(t) for_ in tasks]) == 6 if False else True\n", "Sum([day(wash), day(cook)]) == 6\n")
    out = execute_task({"solver": "smt", "program": good})
    assert out.verdict == "A"


def test_no_option_holds_is_no_answer():
    out = run("is_valid(slot(Ann) == 3) ::: (A)")
    assert (out.error.category, out.error.message) == ("no_answer", "no option holds")


def test_sorts_do_not_leak_between_problems_in_one_process():
    options = "is_valid(slot(Bob) == 2) ::: (A)"
    assert run(options).verdict == "A"
    assert run(options).verdict == "A"


def test_type_errors_are_execution_errors():
    out = run("is_valid(slot(Bob) == Ann) ::: (A)")
    assert out.error.category == "execution"


@pytest.mark.parametrize("evil", [
    "__import__('os').system('touch {marker}')",
    "slot.__class__",
    "open('{marker}', 'w')",
    "(lambda: 0)()",
    "[x for x in people]",
    "globals()['x']",
])
def test_python_in_programs_is_rejected_before_anything_runs(evil, tmp_path):
    marker = tmp_path / "pwned"
    text = BASE.format(options="is_valid(True) ::: (A)").replace(
        "slot(Ann) == 1 ::: Ann first", evil.format(marker=marker))
    out = execute_task({"solver": "smt", "program": text})
    assert out.error.category in ("parse", "execution")
    assert not marker.exists()
    if "__" in evil or "." in evil.split("(")[0] or "lambda" in evil or " for " in evil:
        with pytest.raises(ProgramParseError):
            get_solver("smt").parse(text)


def test_released_gpt4_program_executes(data_dir):
    from tests.conftest import program

    text = program("AR-LSAT_dev_gpt-4.json", data_dir, "ar_lsat_200006_1-G_2_8")
    out = execute_task({"solver": "smt", "program": text})
    assert out.verdict is not None or out.error.category == "no_answer"
