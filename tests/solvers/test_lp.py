import pytest

from logicpipe.errors import ProgramParseError
from logicpipe.solvers import execute_task, get_solver

HEAD = "Predicates:\nP($x, bool)\n"


def lp(body: str, query: str, seconds: float = 10) -> dict:
    return execute_task({"solver": "lp", "program": f"{HEAD}{body}\nQuery:\n{query}\n",
                         "limits": {"seconds": seconds}})


def test_cyclic_rules_terminate_and_answer():
    body = """Facts:
Red(Bob, True)
Rules:
Red($x, True) >>> Round($x, True)
Round($x, True) >>> Rough($x, True)
Rough($x, True) >>> Red($x, True)
Rough($x, True) >>> Round($x, True)"""
    assert lp(body, "Rough(Bob, True)").verdict == "True"
    assert lp(body, "Big(Bob, True)").verdict == "Unknown"


def test_program_that_loops_under_backward_chaining_terminates():
    body = """Facts:
A(Ann, True)
Rules:
B($x, True) >>> B($x, True)
B($x, True) >>> C($x, True)
C($x, True) >>> B($x, True)
Likes($x, $y, True) >>> Likes($y, $x, True)"""
    assert lp(body, "C(Ann, True)").verdict == "Unknown"


def test_five_step_chain_and_goal_tree_node_by_node():
    body = """Facts:
S0(Max, True) ::: Max is s0.
Rules:
S0($x, True) >>> S1($x, True)
S1($x, True) >>> S2($x, True)
S2($x, True) && S0($x, True) >>> S3($x, True)
S3($x, True) >>> S4($x, True)
S4($x, True) >>> S5($x, False)"""
    out = lp(body, "S5(Max, True)")
    assert out.verdict == "False"
    tree = out.explanation["goal_tree"]
    chain = []
    node = tree
    while node["children"]:
        chain.append((node["goal"], node["by"]))
        node = node["children"][0]
    chain.append((node["goal"], node["by"]))
    assert chain == [
        ("S5(Max, False)", "rule: S4($x, True) >>> S5($x, False)"),
        ("S4(Max, True)", "rule: S3($x, True) >>> S4($x, True)"),
        ("S3(Max, True)", "rule: S2($x, True) && S0($x, True) >>> S3($x, True)"),
        ("S2(Max, True)", "rule: S1($x, True) >>> S2($x, True)"),
        ("S1(Max, True)", "rule: S0($x, True) >>> S1($x, True)"),
        ("S0(Max, True)", "fact: Max is s0."),
    ]
    s3 = tree["children"][0]["children"][0]
    assert [c["goal"] for c in s3["children"]] == ["S2(Max, True)", "S0(Max, True)"]


def test_inconsistent_program_is_reported_not_resolved():
    body = "Facts:\nCold(Bob, True)\nRules:\nCold($x, True) >>> Nice($x, True)\nCold($x, True) >>> Nice($x, False)"
    out = lp(body, "Nice(Bob, True)")
    assert out.error.category == "no_answer"
    assert out.error.message.startswith("inconsistent")


def test_negation_prefix_general_facts_and_unbound_conclusions():
    body = """Facts:
!Green(Bob, True)
Big($x, True)
Rules:
Big(Bob, True) >>> Likes($y, Bob, True)"""
    assert lp(body, "Green(Bob, False)").verdict == "True"
    assert lp(body, "Big(Anne, True)").verdict == "True"
    assert lp(body, "Likes(Cat, Bob, True)").verdict == "True"


def test_runaway_saturation_is_a_timeout():
    constants = "\n".join(f"R(c{i}, True)" for i in range(60))
    body = f"Facts:\n{constants}\nRules:\nR($a, True) && R($b, True) && R($c, True) && R($d, True) >>> S($a, $b, $c, $d, True)"
    out = lp(body, "S(c1, c2, c3, c4, True)", seconds=2)
    assert out.error.category == "timeout"


@pytest.mark.parametrize("text, reason", [
    ("Facts:\nRed(Bob True\nQuery:\nRed(Bob, True)", "line 2"),
    ("Facts:\nRed(Bob, True)\nRules:\nRed($x, True) >>> >>> Big($x, True)\nQuery:\nRed(Bob, True)", "exactly one '>>>'"),
    ("Facts:\nRed(Bob, True)\n", "missing 'Query:'"),
    ("Red(Bob, True)\nQuery:\nRed(Bob, True)", "text before the first section header"),
    ("Facts:\nRed(Bob, True)\nQuery:\nRed($x, True)", "must not contain variables"),
    ("Facts:\nRed(Bob's, True)\nQuery:\nRed(Bob, True)", "bad argument"),
])
def test_syntax_errors_are_parse_errors(text, reason):
    with pytest.raises(ProgramParseError) as caught:
        get_solver("lp").parse(text)
    assert reason in str(caught.value)
    assert execute_task({"solver": "lp", "program": text}).error.category == "parse"


def test_problems_are_isolated_from_each_other():
    first = lp("Facts:\nRed(Bob, True)", "Red(Bob, True)")
    second = lp("Facts:\nBlue(Bob, True)", "Red(Bob, True)")
    assert first.verdict == "True" and second.verdict == "Unknown"


def test_released_programs_answer_like_the_gold_label(data_dir):
    from tests.conftest import program

    text = program("ProofWriter_dev_gpt-4.json", data_dir, "ProofWriter_AttNoneg-OWA-D5-1041_Q1")
    assert execute_task({"solver": "lp", "program": text}).verdict == "True"
