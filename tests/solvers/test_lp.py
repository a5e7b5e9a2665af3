import pytest

from logicpipe.core.errors import ProgramParseError
from logicpipe.core.records import SolveRecord
from logicpipe.solvers import Limits, execute_task, get_solver, lp, lp_prolog, map_answer
from logicpipe.solvers.lp import MAX_GOAL_NODES, goal_tree_lines

HEAD = "Predicates:\nP($x, bool)\n"


def run(body: str, query: str, seconds: float = 10) -> dict:
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
    assert run(body, "Rough(Bob, True)").verdict == "True"
    assert run(body, "Big(Bob, True)").verdict == "Unknown"


def test_program_that_loops_under_backward_chaining_terminates():
    body = """Facts:
A(Ann, True)
Rules:
B($x, True) >>> B($x, True)
B($x, True) >>> C($x, True)
C($x, True) >>> B($x, True)
Likes($x, $y, True) >>> Likes($y, $x, True)"""
    assert run(body, "C(Ann, True)").verdict == "Unknown"


def test_five_step_chain_and_goal_tree_node_by_node():
    body = """Facts:
S0(Max, True) ::: Max is s0.
Rules:
S0($x, True) >>> S1($x, True)
S1($x, True) >>> S2($x, True)
S2($x, True) && S0($x, True) >>> S3($x, True)
S3($x, True) >>> S4($x, True)
S4($x, True) >>> S5($x, False)"""
    out = run(body, "S5(Max, True)")
    assert out.verdict == "False"
    nodes = out.explanation["goal_tree"]["nodes"]
    chain = []
    node = nodes[0]
    while node["children"]:
        chain.append((node["goal"], node["by"]))
        node = nodes[node["children"][0]]
    chain.append((node["goal"], node["by"]))
    assert chain == [
        ("S5(Max, False)", "rule: S4($x, True) >>> S5($x, False)"),
        ("S4(Max, True)", "rule: S3($x, True) >>> S4($x, True)"),
        ("S3(Max, True)", "rule: S2($x, True) && S0($x, True) >>> S3($x, True)"),
        ("S2(Max, True)", "rule: S1($x, True) >>> S2($x, True)"),
        ("S1(Max, True)", "rule: S0($x, True) >>> S1($x, True)"),
        ("S0(Max, True)", "fact: Max is s0."),
    ]
    s3 = nodes[nodes[nodes[0]["children"][0]]["children"][0]]
    assert [nodes[c]["goal"] for c in s3["children"]] == ["S2(Max, True)", "S0(Max, True)"]
    # S0 is a premise twice (of S1 and of S3): stored once, referenced by id, drawn once in full.
    assert len(nodes) == 6
    lines = goal_tree_lines(out.explanation)
    assert lines[0] == (0, "S5(Max, False)  (rule: S4($x, True) >>> S5($x, False))")
    assert lines[-1] == (3, "S0(Max, True)  (fact: Max is s0.)  [shown above]")
    assert [depth for depth, _ in lines] == [0, 1, 2, 3, 4, 5, 3]


def test_inconsistent_program_is_reported_not_resolved():
    body = "Facts:\nCold(Bob, True)\nRules:\nCold($x, True) >>> Nice($x, True)\nCold($x, True) >>> Nice($x, False)"
    out = run(body, "Nice(Bob, True)")
    assert out.error.category == "no_answer"
    assert out.error.message.startswith("inconsistent")


def test_negation_prefix_general_facts_and_unbound_conclusions():
    body = """Facts:
!Green(Bob, True)
Big($x, True)
Rules:
Big(Bob, True) >>> Likes($y, Bob, True)"""
    assert run(body, "Green(Bob, False)").verdict == "True"
    assert run(body, "Big(Anne, True)").verdict == "True"
    assert run(body, "Likes(Cat, Bob, True)").verdict == "True"


def run_away() -> dict:
    constants = "\n".join(f"R(c{i}, True)" for i in range(60))
    body = f"Facts:\n{constants}\nRules:\nR($a, True) && R($b, True) && R($c, True) && R($d, True) >>> S($a, $b, $c, $d, True)"
    # 0.5 s: on a quiet fast machine, 13 million S facts fill the 1 GB stack at about 1.5 s (an execution
    # error, as in plain swipl); the time limit must come first, whatever the machine's speed.
    return run(body, "S(c1, c2, c3, c4, True)", seconds=0.5)


def test_runaway_saturation_is_a_timeout():
    error = run_away().error
    assert (error.category, error.message) == ("timeout", "saturation did not finish within 0.5 s")


@pytest.mark.parametrize("text, reason", [
    ("Facts:\nRed(Bob True\nQuery:\nRed(Bob, True)", "line 2"),
    ("Facts:\nRed(Bob, True)\nRules:\nRed($x, True) >>> >>> Big($x, True)\nQuery:\nRed(Bob, True)", "exactly one '>>>'"),
    ("Facts:\nRed(Bob, True)\n", "missing 'Query:'"),
    ("Query:\nRed(Bob, True)", "no facts and no rules"),
    ("Facts:\nRed(Bob, True)\nQuery:\nAnswer: True\nRed(Bob, True)", "expected an atom"),
    ("Facts:\nRed(Bob, True)\nQuery:\nRed($x, True)", "must not contain variables"),
    ("Facts:\nRed(Bob's, True)\nQuery:\nRed(Bob, True)", "bad argument"),
    # A missing comma: read as a constant "Eve True", the program would run and answer Unknown.
    ("Predicates:\nTeacher($x, bool)\nFacts:\nTeacher(Eve True)\nQuery:\nTeacher(Eve, True)",
     "line 4: 'Eve True' is one name holding True or False: is a comma missing before it? in 'Teacher(Eve True)'"),
    ("Facts:\nTeacher(Eve, True)\nRules:\nTeacher(Eve True) >>> Kind(Eve, False)\nQuery:\nKind(Eve, False)",
     "line 4: 'Eve True' is"),
    ("Facts:\nTeacher(Eve, True)\nQuery:\nTeacher(Eve True)", "line 4: 'Eve True' is one name"),
])
def test_syntax_errors_are_parse_errors(text, reason):
    with pytest.raises(ProgramParseError) as caught:
        get_solver("lp").parse(text)
    assert reason in str(caught.value)
    assert execute_task({"solver": "lp", "program": text}).error.category == "parse"


def test_names_of_several_words_without_a_truth_word_are_names():
    result = run("Facts:\nRough(Bald Eagle, True)\nRules:\nRough($x, True) >>> Big($x, True)",
                 "Big(Bald Eagle, True)")
    assert result.verdict == "True" and result.error is None


def test_problems_are_isolated_from_each_other():
    first = run("Facts:\nRed(Bob, True)", "Red(Bob, True)")
    second = run("Facts:\nBlue(Bob, True)", "Red(Bob, True)")
    assert first.verdict == "True" and second.verdict == "Unknown"


def test_released_programs_answer_like_the_gold_label(data_dir):
    from tests.conftest import program

    text = program("ProofWriter_dev_gpt-4.json", data_dir, "ProofWriter_AttNoneg-OWA-D5-1041_Q1")
    assert execute_task({"solver": "lp", "program": text}).verdict == "True"


# Issue 12: explanations of any depth and breadth serialise, read back, and stay bounded.

def _round_trip(out: dict) -> SolveRecord:
    record = SolveRecord(id="p", dataset="d", solver="lp", verdict=out.verdict, explanation=out.explanation)
    return SolveRecord.model_validate_json(record.model_dump_json())


def test_deep_derivation_serialises_and_reads_back():
    rules = "\n".join(f"P{i}($x, True) >>> P{i + 1}($x, True)" for i in range(199))
    out = run(f"Facts:\nP0(a, True)\nRules:\n{rules}", "P199(a, True)")
    assert out.verdict == "True"
    lines = goal_tree_lines(_round_trip(out).explanation or {})
    assert len(lines) == 200 and lines[-1] == (199, "P0(a, True)  (fact: P0(a, True))")


def test_diamonds_share_subproofs():
    # Sixteen diamonds in a row: expanded into a tree, the proof would have 2**16 leaves.
    rules = []
    for i in range(16):
        rules += [f"D{i}($x, True) >>> L{i}($x, True)", f"D{i}($x, True) >>> R{i}($x, True)",
                  f"L{i}($x, True) && R{i}($x, True) >>> D{i + 1}($x, True)"]
    out = run("Facts:\nD0(a, True)\nRules:\n" + "\n".join(rules), "D16(a, True)")
    assert out.verdict == "True"
    tree = out.explanation["goal_tree"]
    nodes = tree["nodes"]
    assert len(nodes) == 16 * 3 + 1 and "truncated" not in tree
    index = {n["goal"]: i for i, n in enumerate(nodes)}
    left, right = (nodes[c] for c in nodes[index["D15(a, True)"]]["children"])
    assert (left["goal"], right["goal"]) == ("L14(a, True)", "R14(a, True)")
    assert left["children"] == right["children"] == [index["D14(a, True)"]]
    assert len(_round_trip(out).model_dump_json()) < 20_000
    assert len(goal_tree_lines(out.explanation)) == 1 + 16 * 3 + 16  # each shared node drawn once more


def test_goal_tree_is_capped_and_says_so():
    count = MAX_GOAL_NODES + 50
    facts = "\n".join(f"Q(c{i}, True)" for i in range(count))
    premises = " && ".join(f"Q(c{i}, True)" for i in range(count))
    out = run(f"Facts:\n{facts}\nRules:\n{premises} >>> Top(a, True)", "Top(a, True)")
    tree = out.explanation["goal_tree"]
    assert out.verdict == "True" and len(tree["nodes"]) == MAX_GOAL_NODES
    assert tree["truncated"] == f"kept the first {MAX_GOAL_NODES} nodes; 51 premise links not stored"
    assert goal_tree_lines(out.explanation)[-1][1].startswith("(goal tree truncated")


def test_unusual_variable_names_are_renamed_not_dropped():
    body = "Facts:\nA(Bob, True)\nRules:\nA($y², True) >>> B($y², True)"
    assert run(body, "B(Bob, True)").verdict == "True"


def test_a_clause_the_engine_refuses_fails_the_program(monkeypatch):
    monkeypatch.setattr(lp, "_to_prolog", lambda program, table: "fact(f0, a(p0, [V_y²], true)).\n")
    out = run("Facts:\nA(Bob, True)", "A(Bob, True)")
    assert out.error.category == "execution"
    assert "refused the program: syntax error" in out.error.message


# Issue 13: one engine per process, reset between programs.

def test_engine_is_reused_and_a_program_cannot_leave_state_behind():
    probe = "fact(f0, a(p0, [c1], true)).\nrule(r0, a(p1, [V0], true), [a(p0, [V0], true)]).\n"
    fresh = lp_prolog.run_program(probe, 10, 64)
    engine = lp_prolog._engine
    assert engine is not None
    polluting = ("fact(f0, a(p7, [c9], true)).\n"
                 ":- op(700, xfx, ===>).\n:- set_prolog_flag(double_quotes, codes).\n"
                 ":- assertz(fact(f1, a(p0, [c2], true))).\n"
                 "known(1, a(p0, [c3], true), f0, []).\nrule(r1, a(p0, [c4], true), []).\n")
    refused = lp_prolog.run_program(polluting, 10, 64)
    assert [line for line in refused.splitlines() if line.startswith("ERROR")] == [
        "ERROR\trefused term :-op(700,xfx,===>)",
        "ERROR\trefused term :-set_prolog_flag(double_quotes,codes)",
        "ERROR\trefused term :-assertz(fact(f1,a(p0,[c2],true)))",
        "ERROR\trefused term known(1,a(p0,[c3],true),f0,[])",
        "ERROR\trefused term rule(r1,a(p0,[c4],true),[])"]
    # Facts derived by an earlier program (p7) or smuggled in (c2, c3, c4) are gone for the next one.
    assert lp_prolog.run_program(probe, 10, 64) == fresh == "1\tp0\t[c1]\ttrue\tf0\t\n2\tp1\t[c1]\ttrue\tr0\t1\nEND\n"
    assert lp_prolog._engine is engine


def test_answers_and_goal_trees_match_a_fresh_engine():
    programs = [("Facts:\nRed(Bob, True)\nRules:\nRed($x, True) >>> Big($x, True)", "Big(Bob, True)"),
                ("Facts:\nBig($x, True)\nRules:\nBig(Bob, True) >>> Likes($y, Bob, True)", "Likes(Cat, Bob, True)"),
                ("Facts:\nCold(Bob, True)\nRules:\nCold($x, True) >>> Nice($x, False)", "Nice(Bob, True)")]
    shared = [run(body, query) for body, query in programs]
    fresh = []
    for body, query in programs:
        assert lp_prolog._engine is not None
        lp_prolog._engine.close()
        lp_prolog._engine = None
        fresh.append(run(body, query))
    assert shared == fresh


def test_an_overrun_kills_the_engine_and_the_next_program_gets_a_new_one():
    run("Facts:\nA(a, True)", "A(a, True)")
    old = lp_prolog._engine
    assert old is not None
    assert run_away().error.category == "timeout"
    assert old.process.poll() is not None and lp_prolog._engine is None
    assert run("Facts:\nA(a, True)", "A(a, True)").verdict == "True"


def test_a_process_that_solved_in_process_ends_with_its_engine_stopped():
    # Python's development mode reports a subprocess still running, and pipes and files left open, as
    # the interpreter ends: none of the engine's is (the engine is stopped at exit), and it is gone.
    import subprocess
    import sys
    from pathlib import Path

    program = f"{HEAD}Facts:\nA(a, True)\nQuery:\nA(a, True)\n"
    code = ("from logicpipe.solvers import execute_task, lp_prolog\n"
            f"print(execute_task({{'solver': 'lp', 'program': {program!r}}}).verdict)\n"
            "print(lp_prolog._engine.process.pid)\n")
    done = subprocess.run([sys.executable, "-X", "dev", "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    verdict, pid = done.stdout.split()
    assert verdict == "True"
    assert "ResourceWarning" not in done.stderr, done.stderr
    status = Path(f"/proc/{pid}/status")
    assert not status.exists() or "zombie" in status.read_text()


def test_engine_dies_with_its_parent():
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    child = subprocess.Popen([sys.executable, "-c", (
        "from logicpipe.solvers import lp_prolog; import time; e = lp_prolog.PrologEngine(64); "
        "print(e.process.pid, flush=True); time.sleep(60)")], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    status = Path(f"/proc/{int(child.stdout.readline())}/status")
    child.send_signal(signal.SIGKILL)
    child.wait()
    for _ in range(100):
        if not status.exists() or "zombie" in status.read_text():
            break
        time.sleep(0.05)
    assert not status.exists() or "zombie" in status.read_text()


# Issue 11: unseen LLM output.

def _parse(text: str) -> lp.LPProgram:
    return get_solver("lp").parse(text)


def test_lines_after_the_query_are_ignored_and_recorded():
    body = "Facts:\nRed(Bob, True)"
    out = run(body, "Red(Bob, True)\nAnswer: Unknown.\nTrue.\nBlue(Bob, True)")
    assert out.verdict == "True"
    assert out.explanation["ignored"] == ["ignored 3 lines after the query: 'Answer: Unknown.'"]
    assert "ignored" not in run(body, "Red(Bob, True)").explanation


def test_output_past_the_program_and_before_it_is_cut_and_recorded():
    text = ("Here is the program.\nPredicates:\nRed($x, bool)\nFacts:\nRed(Bob, True)\nQuery:\nRed(Bob, False)\n"
            "------\nProblem:\nSomething else entirely.\nQuery:\nRed(Bob, True)\n")
    out = execute_task({"solver": "lp", "program": text})
    assert out.verdict == "False"
    assert out.explanation["ignored"] == ["ignored 1 line before the first section header: 'Here is the program.'",
                                             "ignored 5 lines after the end of the program: '------'"]


def test_predicates_are_documentation():
    text = "Predicates:\nNot($x, bool) ::: x is not\nBlue($x) ::: fine\nSome prose here.\nFacts:\nRed(Bob, True)\nQuery:\nRed(Bob, True)"
    program = _parse(text)
    assert program.notes == ["ignored 1 line in Predicates: that are not declarations: 'Some prose here.'"]
    assert get_solver("lp").execute(program, Limits(seconds=10)).verdict == "True"


def test_repeated_sections_merge():
    body = "Facts:\nRed($x, True) >>> Big($x, True)\nRules:\nBig($x, True) >>> Kind($x, True)\nFacts:\nRed(Bob, True)"
    assert run(body, "Kind(Bob, True)").verdict == "True"


def test_conjunctive_conclusion_derives_each_atom():
    body = "Facts:\nA(Bob, True)\nRules:\nA($x, True) >>> B($x, True) && C($x, False)"
    assert run(body, "B(Bob, True)").verdict == "True"
    assert run(body, "C(Bob, True)").verdict == "False"
    assert [str(r.head) for r in _parse(f"{HEAD}{body}\nQuery:\nB(Bob, True)").rules] == ["B($x, True)", "C($x, False)"]


def test_quoted_constants_are_the_plain_constant():
    body = "Facts:\nLikes('Wren', \"Anne Marie\", True)\nRules:\nLikes($x, $y, True) >>> Nice($x, True)"
    assert run(body, "Nice(Wren, True)").verdict == "True"
    assert run(body, "Likes(\"Wren\", Anne Marie, True)").verdict == "True"
    with pytest.raises(ProgramParseError, match="bad argument"):
        _parse("Facts:\nLikes('$x', True)\nQuery:\nLikes(a, True)")


def test_rules_without_facts_run_over_an_empty_knowledge_base():
    body = "Rules:\nA($x, True) >>> B($x, True)"
    out = run(body, "B(Bob, True)")
    assert out.verdict == "Unknown" and out.explanation["derived_facts"] == 0
    assert map_answer(out.verdict, ["A) True", "B) False"], closed_world=True) == "B"
    assert map_answer(out.verdict, ["A) True", "B) False", "C) Unknown"]) == "C"


@pytest.mark.parametrize("query, verdict", [
    ("Red(Bob, bool)", "True"), ("Red(Bob, Unknown)", "True"), ("Red(Bob, X)", "True"), ("Red(Bob, $v)", "True"),
    ("Big(Bob, bool)", "False"), ("Red(Ann, bool)", "Unknown"),
])
def test_placeholder_in_the_truth_value_slot_asks_whether_the_atom_is_true(query, verdict):
    out = run("Facts:\nRed(Bob, True)\nBig(Bob, False)", query)
    assert out.verdict == verdict
    placeholder = query.split(", ")[1].rstrip(")")
    assert out.explanation["ignored"] == [f"read the placeholder '{placeholder}' in the query's truth-value slot as True"]


def test_a_constant_in_the_value_slot_of_an_unknown_predicate_stays_an_argument():
    program = _parse("Facts:\nRed(Bob, True)\nQuery:\nLikes(Bob, Anne)")
    assert str(program.query) == "Likes(Bob, Anne, True)" and program.notes == []
