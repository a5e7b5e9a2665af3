"""Answer set programming on clingo: our own programs for LogicalDeduction problems against the gold label
and python-constraint on the released CSP program (the independent oracle), the whitelist against hostile
programs, clingo's errors as located messages, and every solver bound."""

import json
from pathlib import Path

import pytest

from logicpipe.runtime.pool import SolverCall, WorkerPool
from logicpipe.solvers import execute_task
from logicpipe.solvers.lp import goal_tree_lines

FILES = Path(__file__).parent / "files"
PROGRAMS = {r["id"]: r["raw_logic_programs"][0] for r in json.loads((FILES / "asp_logicaldeduction.json").read_text())}


def solve(program: str, seconds: float = 10):
    return execute_task({"solver": "asp", "program": program, "limits": {"seconds": seconds}})


def test_own_programs_answer_as_gold_and_as_the_csp_solver_on_the_released_programs(data_dir):
    gold = {p["id"]: p["answer"] for p in json.loads((data_dir / "data" / "LogicalDeduction" / "dev.json").read_text())}
    released = {r["id"]: r["raw_logic_programs"][0] for r in
                json.loads((data_dir / "programs" / "LogicalDeduction_dev_gpt-4.json").read_text())}
    assert len(PROGRAMS) == 5
    for pid, program in PROGRAMS.items():
        answered = solve(program)
        assert answered.error is None, (pid, answered.error)
        oracle = execute_task({"solver": "csp", "program": released[pid], "limits": {"seconds": 10}})
        assert answered.verdict == gold[pid] == oracle.verdict, pid


def test_the_explanation_is_a_goal_tree_of_the_rules_that_derive_the_answer():
    answered = solve(PROGRAMS["logical_deduction_1"])
    explanation = answered.explanation
    assert answered.verdict == "A" and explanation["answer_sets"] == 1 and explanation["answer"] == "option(a)"
    lines = goal_tree_lines(explanation)
    assert lines[0] == (0, "option(a)  (line 12: option(a) :- at(convertible, 4).)")
    assert (1, "at(convertible,4)  (fact)") in lines
    assert "at(sedan,5)" in explanation["cautious"]


@pytest.mark.parametrize("hostile, refused", [
    ('#script (python)\nimport os\nopen("MARKER", "w").write("ran")\n#end.\noption(a).', "#script is not allowed"),
    ('#script(lua) io.open("MARKER", "w") #end.\noption(a).', "#script is not allowed"),
    ('#include "MARKER.lp".\n', "#include is not allowed"),
    ('#  include "MARKER.lp".\n', "#include is not allowed"),
    ('option(a) :- x(@write("MARKER")).\n', "@-terms (calls into Python or Lua) are not allowed"),
    ('option(a) :- x(@ f(1)).\n', "@-terms"),
    ('#external e.\noption(a) :- e.\n', "#external is not allowed"),
    ('#program step(t).\noption(a).\n', "#program is not allowed"),
    ('#theory t { }.\noption(a).\n', "#theory is not allowed"),
    ('#heuristic a. [1, sign]\noption(a).\n', "#heuristic is not allowed"),
    ('option(a) :- &sum { 1 } > 0.\n', "TheoryAtom statements are not allowed"),
    ('lp_support_rule(1, ()).\noption(a).\n', "reserved"),
])
def test_hostile_programs_are_refused_as_parse_errors_and_run_nothing(tmp_path, monkeypatch, hostile, refused):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "MARKER.lp").write_text("option(a).\n")
    answered = solve(hostile.replace("MARKER", str(tmp_path / "marker")))
    assert answered.verdict is None and answered.error.category == "parse", answered
    assert refused in answered.error.message
    assert not (tmp_path / "marker").exists()


def test_clingo_itself_would_read_an_included_file(tmp_path):
    """Why #include is refused in the text: clingo's parser opens the file (this test fails if it stops)."""
    import clingo.ast

    (tmp_path / "secret.lp").write_text("secret.\n")
    read: list = []
    clingo.ast.parse_string(f'#include "{tmp_path / "secret.lp"}".', read.append)
    assert "secret." in [str(statement) for statement in read]
    answered = solve(f'#include "{tmp_path / "secret.lp"}".\noption(a) :- secret.\n')
    assert answered.error.category == "parse" and "line 1, column 1: #include is not allowed" in answered.error.message


def test_a_non_ascii_character_in_code_is_a_located_parse_error_not_a_dead_process():
    """clingo's lexer names the character by its first byte, which its Python binding cannot decode: in
    its logger callback that aborts the process (found by tests/llm/test_grammar_asp.py's mutations)."""
    import subprocess
    import sys

    text = ':- n\u2200ot newer(tractor, motorcycle).\noption(a).\n'
    crash = f"import clingo.ast; clingo.ast.parse_string({text!r}, lambda s: None, logger=lambda c, m: None)"
    assert subprocess.run([sys.executable, "-c", crash], capture_output=True).returncode != 0
    answered = solve(text)
    assert answered.error.category == "parse", answered
    assert "line 1, column 5: unexpected character '\u2200'" in answered.error.message
    # In strings and comments any character is data.
    assert solve('% caf\u00e9\nname("caf\u00e9 \u2200").\noption(a) :- name(_).\n').verdict == "A"


def test_a_nul_character_is_a_parse_error_since_clingo_stops_reading_there():
    """Found by tests/llm/test_grammar_asp.py's mutations: clingo reads a C string, so a NUL in a comment
    hid every rule after it."""
    import clingo.ast

    text = "% a note\x00 cut here\noption(a).\n"
    read: list = []
    clingo.ast.parse_string(text, read.append)
    assert "option(a)." not in [str(statement) for statement in read]  # never read
    answered = solve(text)
    assert answered.error.category == "parse", answered
    assert "line 1, column 9: a NUL character: clingo would stop reading the program there" in answered.error.message


def test_directives_in_comments_and_strings_are_data():
    answered = solve('% #script (python) in a comment\n%* #include "x" *%\nname("#include @f").\noption(a) :- name(_).\n')
    assert answered.verdict == "A", answered.error
    # '@' before a priority (a number or a variable) is weak-constraint syntax, not a call.
    weighted = solve("c(1, 2, 1).\n{ p }.\n:~ p. [1@2]\n#minimize { W@P, X : c(X, W, P), p }.\noption(a) :- not p.\n")
    assert weighted.verdict == "A", weighted.error


def test_clingo_errors_are_located_for_refinement():
    syntax = solve("object(a).\noption(a) :- object(.\n")
    assert syntax.error.category == "parse"
    assert syntax.error.message.startswith("line 2, column 21: clingo: syntax error, unexpected .")
    unsafe = solve("option(X) :- not p(X).\np(a).\n")
    assert unsafe.error.category == "execution"
    assert "clingo grounding failed" in unsafe.error.message and "unsafe variables" in unsafe.error.message
    none = solve("p(a).\n")
    assert none.error.category == "parse" and "states no answer" in none.error.message


def test_what_decides_nothing_is_no_answer_never_a_guess():
    inconsistent = solve("option(a).\n:- option(a).\n")
    assert inconsistent.error.category == "no_answer" and "no answer set" in inconsistent.error.message
    open_ = solve("1 { at(1); at(2) } 1.\noption(a) :- at(1).\noption(b) :- at(2).\n")
    assert open_.error.category == "no_answer"
    assert open_.error.message == "no option holds in every answer set (A, B in some)"
    assert open_.explanation["answer_sets"] == 2
    both = solve("option(a).\noption(b).\n")
    assert both.error.message == "options A, B all hold in every answer set"


def test_true_false_and_unknown_from_cautious_and_brave_consequences():
    assert solve("bird(tweety).\nflies(X) :- bird(X), not abnormal(X).\nquery :- flies(tweety).\n").verdict == "True"
    assert solve("bird(tweety).\nabnormal(tweety).\nflies(X) :- bird(X), not abnormal(X).\nquery :- flies(tweety).\n"
                 ).verdict == "False"
    assert solve("{ rain }.\nquery :- rain.\n").verdict == "Unknown"


def test_optimisation_answers_from_the_optimal_answer_sets():
    program = "1 { at(1..3) } 1.\n#minimize { P : at(P) }.\noption(a) :- at(1).\noption(b) :- at(2).\noption(c) :- at(3).\n"
    answered = solve(program)
    assert answered.verdict == "A" and answered.explanation["optimal"] is True
    assert answered.explanation["answer_sets"] == 1


PIGEONS = "p(1..14).\nh(1..13).\n1 { in(P, H) : h(H) } 1 :- p(P).\n:- in(P, H), in(Q, H), P < Q.\noption(a).\n"


def test_clingo_stops_itself_at_the_time_bound():
    answered = solve(PIGEONS, seconds=0.5)
    assert answered.error.category == "timeout" and "time bound" in answered.error.message


def test_the_worker_pool_bounds_memory_and_time():
    calls = [SolverCall("huge", {"solver": "asp", "program": "n(1..200000000).\noption(a) :- n(_).\n",
                                 "limits": {"seconds": 60}}, timeout=60),
             SolverCall("slow", {"solver": "asp", "program": PIGEONS, "limits": {"seconds": 60}}, timeout=1),
             SolverCall("fine", {"solver": "asp", "program": PROGRAMS["logical_deduction_0"]}, timeout=30)]
    with WorkerPool("logicpipe.solvers:execute_task", workers=1, memory_mb=256) as pool:
        outcomes = {o.key: o for o in pool.map(calls)}
    huge = outcomes["huge"]
    assert huge.status == "error" and "memory" in huge.message, huge
    assert outcomes["slow"].status == "timeout"
    assert outcomes["fine"].status == "ok" and outcomes["fine"].value.verdict == "D"
