import ast
import subprocess
import sys

import pytest

from logicpipe.core.errors import PrerequisiteError
from logicpipe.solvers import execute_task, get_solver, smt
from logicpipe.solvers.smt import Z3_MEMORY_MB


def pair(error):
    """(category, message) of a typed error, for comparing with a literal."""
    return (error.category, error.message) if error is not None else None

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
    assert pair(out.error) == ("no_answer", "no option holds")


def test_sorts_do_not_leak_between_problems_in_one_process():
    options = "is_valid(slot(Bob) == 2) ::: (A)"
    assert run(options).verdict == "A"
    assert run(options).verdict == "A"


@pytest.mark.parametrize("evil, kind", [
    ("__import__('os').system('touch {marker}')", "parse"),
    ("slot.__class__", "parse"),
    ("open('{marker}', 'w')", "execution"),
    ("(lambda: 0)()", "parse"),
    ("[x for x in people]", "parse"),
    ("globals()['x']", "execution"),
])
def test_python_in_programs_is_rejected_before_anything_runs(evil, kind, tmp_path):
    marker = tmp_path / "pwned"
    text = BASE.format(options="is_valid(True) ::: (A)").replace(
        "slot(Ann) == 1 ::: Ann first", evil.format(marker=marker))
    out = execute_task({"solver": "smt", "program": text})
    assert out.error.category == kind
    assert not marker.exists()


def test_released_gpt4_program_executes(data_dir):
    from tests.conftest import program

    text = program("AR-LSAT_dev_gpt-4.json", data_dir, "ar_lsat_200006_1-G_2_8")
    out = execute_task({"solver": "smt", "program": text})
    assert out.verdict == "E"
    assert out.explanation["options"] == {"A": False, "B": False, "C": False, "D": False, "E": True}


def test_a_constraint_the_declarations_rule_out_is_an_inconsistent_premise():
    out = run("is_valid(slot(Cid) == 3) ::: (A)", BASE.replace("slot(Bob) < slot(Cid)", "slot(Bob) == 7"))
    assert pair(out.error) == ("no_answer", "inconsistent premises: this constraint cannot hold: line 15: 'slot(Bob) == 7'")


def test_inconsistent_premises_are_no_answer_naming_the_conflicting_lines():
    out = run("is_valid(slot(Cid) == 3) ::: (A)", BASE.replace("slot(Bob) < slot(Cid)", "slot(Bob) == 1"))
    assert pair(out.error) == ("no_answer", "inconsistent premises: these constraints cannot all hold: "
                            "line 9: 'Distinct([p:people], slot(p))'; line 10: 'slot(Ann) == 1'; "
                            "line 15: 'slot(Bob) == 1'")


@pytest.mark.parametrize("option, message", [
    ("slot(Bob) == Ann", "line 19: 'slot(Bob) == Ann' compares a value of sort Int with one of sort people"),
    ("1 == Ann", "line 19: '1 == Ann' compares a value of sort Int with one of sort people"),
    ("slot(Ann) in [Ann, 2]", "line 19: 'slot(Ann) in [Ann, 2]' compares a value of sort Int with one of sort people"),
    ("likes(Ann, Bob) == Ann", "line 19: 'likes(Ann, Bob) == Ann' compares a value of sort Bool with one of sort "
                               "people"),
    ("Ann < Bob", "line 19: '<' needs numbers, but 'Ann' is of sort people (members of an EnumSort have no "
                  "order; compare numbers, e.g. positions from a function into a numbered sort)"),
    ("1 < Bob", "line 19: '<' needs numbers, but 'Bob' is of sort people (members of an EnumSort"),
    ("slot(Ann) + Ann == 2", "line 19: '+' needs numbers, but 'Ann' is of sort people in"),
    ("slot(1) == 1", "line 19: argument 1 of slot must be of sort people, but '1' is of sort Int"),
    ("Sum([Ann, Bob]) == 1", "line 19: cannot build 'Sum([Ann, Bob])': Sort mismatch at argument #1"),
    ("ForAll([p:people], slot(p))", "line 19: expected a condition (true or false), got a value of sort Int "
                                    "in 'is_valid(ForAll([p:people], slot(p)))'"),
])
def test_type_errors_name_the_line_and_the_construct(option, message):
    out = run(f"is_valid({option}) ::: (A)")
    assert out.error.category == "execution"
    assert out.error.message.startswith(message)
    assert out.error.message.endswith(f" in 'is_valid({option})'")


@pytest.mark.parametrize("text, message", [
    ("slot(Ann) == 0x" + "f" * 3600, "line 10, column 14: integer 0xfffffffffffffffffff... is out of range"),
    ("slot(Ann) == " + " + ".join(["1"] * 2000), "line 10, column 14: expression nests more than 100 levels deep"),
    ("slot(Ann) | slot(Bob)", "line 10, column 1: '|' is not allowed here (write 'or')"),
])
def test_literals_and_trees_that_broke_z3_or_python_are_parse_errors(text, message):
    out = execute_task({"solver": "smt", "program": BASE.format(options="is_valid(True) ::: (A)").replace(
        "slot(Ann) == 1 ::: Ann first", text)})
    assert out.error.category == "parse"
    assert out.error.message.startswith(message)


def test_a_numbered_sort_member_out_of_range_is_a_parse_error():
    out = run("is_valid(True) ::: (A)", BASE.replace("[1, 2, 3]", "[1, 2, 9" + "9" * 5000 + "]"))
    assert out.error.category == "parse"
    assert out.error.message.startswith("line 4: number 999999999999999999999... is out of range")
    assert len(out.error.message) < 300


def test_a_member_of_two_sorts_names_its_line():
    out = run("is_valid(True) ::: (A)", BASE.replace("men = EnumSort([Bob, Cid])", "men = EnumSort([Bob, Dan])"))
    assert pair(out.error) == ("execution", "line 3: member Bob of sort men already belongs to another sort; "
                                         "give each sort its own member names")


def test_a_missing_z3_is_a_prerequisite_error_with_the_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "z3", None)
    with pytest.raises(PrerequisiteError, match="pip install z3-solver"):
        get_solver("smt").check()


def test_a_memory_bound_too_small_for_z3_says_so():
    script = (
        "import resource, sys\n"
        "from logicpipe.core.errors import PrerequisiteError\n"
        "from logicpipe.solvers.smt import load_z3\n"
        "resource.setrlimit(resource.RLIMIT_AS, (32 * 2**20, 32 * 2**20))\n"
        "try:\n    load_z3()\nexcept PrerequisiteError as exc:\n    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip().splitlines()[-1] == (
        f"the memory bound of 32 MB is too small to load Z3, which needs about {Z3_MEMORY_MB} MB: raise --memory-mb")


class _Made:
    """Stands in for a Z3 context (weakly referable, so a test can see it freed)."""


class _FakeZ3:
    def __init__(self, fail_first: bool = False):
        self.fail_first, self.made = fail_first, 0

    def Context(self):  # noqa: N802 - z3's name
        self.made += 1
        if self.fail_first and self.made == 1:
            raise MemoryError
        return _Made()


def test_each_program_gets_a_context_of_its_own_and_the_helper_frees_it_behind():
    import weakref

    contexts = smt._Contexts(_FakeZ3())
    first = contexts.take()
    second = contexts.take()
    assert first is not second
    gone = weakref.ref(first)
    contexts.retire(first)
    del first
    contexts.take()  # the helper frees what was retired before it makes the next one
    contexts.take()
    assert gone() is None


def test_a_context_that_cannot_be_made_fails_its_program_and_the_next_gets_one():
    contexts = smt._Contexts(_FakeZ3(fail_first=True))
    with pytest.raises(MemoryError):
        contexts.take()
    assert isinstance(contexts.take(), _Made)


def test_a_solved_program_leaves_no_garbage_cycle_holding_its_z3_objects():
    """Its context must go when the helper drops it; held in a cycle, only the garbage collector
    would free it, in the middle of a later program (a nested option check once made one)."""
    import gc

    import z3

    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        run("is_exception(is_sat(likes(Bob, Ann))) ::: (A)\nis_valid(slot(Bob) == 2) ::: (B)")
        gc.collect()
        held = [o for o in gc.garbage if isinstance(o, (z3.Context, z3.AstRef, smt._World))]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert held == []


def test_terms_built_through_the_c_api_are_z3pys_own():
    """The world builds connectives, comparisons, counts and applications with single C calls; each
    must be the very term z3py's functions build from the same operands in the same order (Z3 shares
    equal terms, so `eq` is identity). z3py's operators may swap them: see World.eq."""
    import z3

    world = smt._World(z3, get_solver("smt").parse(BASE.format(options="is_sat(True) ::: (A)")), z3.Context())
    ctx = world.ctx
    p, q = z3.Bool("p", ctx), z3.Bool("q", ctx)
    i, j = z3.Int("i", ctx), z3.Int("j", ctx)
    ann, bob = world.names["Ann"], world.names["Bob"]
    slot, likes = world.functions["slot"], world.functions["likes"]
    score = z3.Function("score", z3.IntSort(ctx), z3.IntSort(ctx))
    world.functions["score"], world.results["score"] = score, z3.ArithRef
    pairs = [
        (world.and_([p, q, p]), z3.And(p, q, p)), (world.or_([p]), z3.Or(p)), (world.not_(p), z3.Not(p)),
        (world.implies(p, q), z3.Implies(p, q)), (world.xor(p, q), z3.Xor(p, q)),
        (world.eq(i, j), i == j), (world.eq(ann, bob), ann == bob), (world.eq(p, i), p == i),
        (world.ne(i, j), i != j), (world.ne(ann, bob), ann != bob),
        (world.order(ast.Lt, i, j), i < j), (world.order(ast.GtE, i, z3.IntVal(2, ctx)), i >= 2),
        (world.count([p, q]), z3.Sum([z3.If(p, 1, 0), z3.If(q, 1, 0)])),
        (world._apply("slot", slot, [ann]), slot(ann)), (world._apply("likes", likes, [ann, bob]), likes(ann, bob)),
        (world._apply("score", score, [p]), score(p)),
    ]
    for ours, theirs in pairs:
        assert ours.eq(theirs), (ours, theirs)
        assert type(ours) is type(theirs)
    with pytest.raises(z3.Z3Exception):  # Z3 itself refuses what z3py's checks would have
        world.eq(ann, i)
    with pytest.raises(z3.Z3Exception):
        world._apply("slot", slot, [i])


def test_a_quantifier_instantiates_its_body_as_building_it_for_each_member_would():
    """expand builds a body once, with placeholders, and has Z3 substitute each combination; `each`
    builds it anew for every combination. The terms must be the same, whatever the body does with its
    variables: compare numbers (a numeral's class makes z3py swap operands), compare lists, nest scopes."""
    import z3

    bodies = ["ForAll([m:men], slot(m) > 1)", "ForAll([s:slots], 1 <= s <= 3)", "Exists([s:slots], slot(Ann) == s)",
              "ForAll([p:people], Exists([q:men], likes(p, q)))", "Count([p:people, q:people], [p, q] == [Ann, Bob]) == 1",
              "ForAll([p:people, q:people], Implies((p, q) != (Ann, Bob), Not(likes(p, q))))",
              "Distinct([p:people], slot(p))", "Exists([p:people], p in [Ann, Bob])", "Sum([p:people], slot(p)) == 6",
              "ForAll([p:men], True)", "ForAll([p:people], ForAll([p:men], slot(p) >= 2))",
              "Count([s:slots], Exists([p:people], slot(p) == s + 1 - 1)) == 3", "ForAll([s:slots], [s, 1] != [2, s])"]
    text = BASE.replace("slot(Bob) < slot(Cid)\n", "\n".join(bodies) + "\n").format(options="is_sat(True) ::: (A)")
    program = get_solver("smt").parse(text)
    world = smt._World(z3, program, z3.Context())
    lines = program.constraints[-len(bodies):]
    templated = [world.eval(line.node, {}, line) for line in lines]
    world.templates = False
    built = [world.eval(line.node, {}, line) for line in lines]
    for ours, theirs, body in zip(templated, built, bodies):
        assert ours.eq(theirs), (body, ours, theirs)


def test_lists_compare_member_by_member_inside_a_quantifier():
    base = BASE.replace("slot(Bob) < slot(Cid)\n", "")
    out = run("is_valid(Count([p:people, q:people], [p, q] == [Ann, Bob]) == 1) ::: (A)", base)
    assert out.verdict == "A"
    out = run("is_valid(ForAll([p:people], (p, Ann) != (Ann, p) or p == Ann)) ::: (A)", base)
    assert out.verdict == "A"


def test_a_scope_over_members_of_two_sorts_still_expands():
    base = BASE.replace("men = EnumSort([Bob, Cid])", "men = EnumSort([Bob, Cid])\ncounts = IntSort([k1, k2])\n"
                        "mix = EnumSort([Ann, k1])")
    out = run("is_valid(ForAll([z:mix], z == z)) ::: (A)\nis_valid(Count([z:mix], z == z) == 2) ::: (B)", base)
    assert out.error is None and out.explanation["options"] == {"A": True, "B": True}
