"""Red team, fourth round: goals hidden in write options (portray_goal, format's ~W, print/2, ...), the
engine's own state (its global variables, its facts in user, threads), and answers too large, too deep
or cyclic to write out. Each hostile goal must leave no marker file and end `unknown` (a refusal); every
other goal of the same batch must answer as plain swipl answers it on the same KB (one swipl process
runs them all, each in a snapshot as the engine does)."""

import json
import subprocess
import time

import pytest

from logicpipe.kb.ask import AskRecord
from logicpipe.kb.knowledge import KnowledgeBase
from logicpipe.kb.prolog import GRACE_SECONDS, STDERR_KEPT, ProofLimits
from logicpipe.solvers.lp import swipl_path
from logicpipe.testing.server import FakeOpenAI
from tests.kb.test_redteam import _reply

RULES = """\
:- dynamic fact/1.
fact(0).
render(T, S, Opts) :- term_string(T, S, Opts).
say_fmt(F, Args) :- format(F, Args).
wt(T, Opts) :- with_output_to(string(_), write_term(T, Opts)).
pr(T, Opts) :- with_output_to(string(_), print_term(T, Opts)).
len(T, Opts, L) :- write_length(T, L, Opts).
fmt_atom(F, Args, A) :- format(atom(A), F, Args).
fmt_str(F, Args, S) :- with_output_to(string(S), format(F, Args)).
my_portray(T, _) :- T.
show_with(T) :- with_output_to(string(_), write_term(T, [portray_goal(my_portray)])).
show_str(T, S) :- term_string(T, S, [portray_goal(my_portray)]).
clause_of(H, B) :- clause(H, B).
pred_prop(H, P) :- predicate_property(H, P).
setting(K, V) :- nb_getval(K, V).
bsetting(K, V) :- b_getval(K, V).
current(K, V) :- nb_current(K, V).
spawn(G) :- thread_create(G, Id, []), thread_join(Id, _).
spawn_exit(G) :- thread_create(true, Id, [at_exit(G)]), thread_join(Id, _).
to_peano(0, z) :- !.
to_peano(N, s(P)) :- N1 is N - 1, to_peano(N1, P).
len([], 0).
len([_|T], N) :- len(T, N0), N is N0 + 1.
pr_to(S, T) :- print(S, T).
pr1(T) :- with_output_to(string(_), print(T)).
set_flag(F, V) :- set_prolog_flag(F, V).
hello :- write(hello), nl, print(world), nl, writeq('it''s'), nl.
"""

T = "'touch {m}'"
SHELL = "[portray_goal(shell)]"
FORGE = ("render([O]>>(thread_create((abolish(user:verdict/5), assertz(user:verdict(_, _, proved, null, null))), "
         "Id, []), thread_join(Id)), S, [portray_goal(call)])")

# Each must leave no marker and be unknown: a goal an option would call, checked and refused.
HOSTILE = [
    # the cases
    f"render({T}, S, {SHELL})",
    f"say_fmt(\"~W\", [{T}, {SHELL}])",
    FORGE,
    # write_term/2, print/2, write_length/3, format/3 into an atom or a string, ~W after other directives
    f"wt({T}, {SHELL})",
    f"pr({T}, {SHELL})",
    f"len({T}, {SHELL}, L)",
    f"fmt_atom(\"~W\", [{T}, {SHELL}], A)",
    f"fmt_str(\"~W\", [{T}, {SHELL}], S)",
    f"say_fmt(\"~a~W\", [x, {T}, {SHELL}])",
    f"say_fmt(\"~W~W\", [x, [], {T}, {SHELL}])",
    f"say_fmt(\"~W\", [{T}, [quoted(true), portray_goal(shell)]])",
    f"fmt_atom(\"~W\", [{T}, [portray(true), portray_goal(shell)]], A)",
    f"wt({T}, [portray(true), portray_goal(shell)])",
    # the goal spelled otherwise: qualified, a closure, a lambda, call/N
    f"render(f({T}), S, [quoted(true), portray_goal(shell)])",
    f"render({T}, S, [portray_goal(user:shell)])",
    f"render({T}, S, [portray_goal(system:shell)])",
    f"render({T}, S, [portray_goal([X, _]>>shell(X))])",
    f"render({T}, S, [portray_goal(call(shell))])",
    f"render(shell({T}), S, [portray_goal(call)])",
    f"render({T}, S, [portray_goal(kb:shell)])",
    f"wt(x, [portray_goal([_, _]>>shell({T}))])",
    f"render(shell({T}), S, [portray_goal(my_portray)])",
    # a KB's own portray hook calling what a goal hands it
    f"show_with(shell({T}))",
    f"show_str(shell({T}), S)",
    f"show_with(render({T}, _, {SHELL}))",
    # hooks switched on by an option's value
    "render(x, S, [attributes(portray)])",
    "render(x, S, [blobs(portray)])",
    # print/1 takes its options from a flag; print/2 writes to a stream a goal names
    f"set_flag(print_write_options, [portray_goal(shell)]), pr1({T})",
    "pr_to(user_output, x)",
    # threads: refused to goals and to KB rules (and an at_exit option is a goal)
    f"spawn(shell({T}))",
    f"spawn_exit(shell({T}))",
    "spawn(fact(0))",
    f"thread_create(shell({T}), Id, [])",
    # the engine's facts and wrappers, by a module-qualified name
    "clause_of(user:kb_pred(N, A), B)",
    "render(x, S, [portray_goal(user:checked)])",
]

# Answered as plain swipl answers them (the engine's state reads as if it were not there).
PLAIN = [
    "X = 1, X = 2",
    "fact(0)",
    "fact(1)",
    "setting(lp_nodes, V)",
    "setting(K, V), K = lp_fired",
    "setting(lp_fired, V)",
    "bsetting(lp_table_limit, V)",
    "current(lp_nodes, V)",
    "current(K, _), atom(K), sub_atom(K, 0, _, _, lp_)",
    "clause_of(found_answer(X), B)",
    "clause_of(kb_pred(N, A), B)",
    "clause_of(verdict(A, B, C, D, E), Body)",
    "clause_of(allowed_builtin(N, A), true)",
    "pred_prop(allowed_builtin(_, _), dynamic)",
    "pred_prop(checked(_), defined)",
    "clause_of(fact(X), B)",
    "render(x, S, [quoted(true)])",
    "render(f('A', \"s\"), S, [quoted(true), max_depth(3)])",
    "render(f(X, Y), S, [variable_names(['X'=X])])",
    f"render({T}, S, [O])",
    f"render({T}, S, [portray_goal(G)])",
    "render(x, S, [portray(true)])",
    "say_fmt(\"~W~n\", [f('A'), [quoted(true)]])",
    "say_fmt(\"~p~n\", [hello])",
    "say_fmt(\"~w ~a~n\", [x, y])",
    "wt(f(x), [quoted(true), portray(true)])",
    "fmt_atom(\"~p-~w\", [a, b], A)",
    "fmt_atom(\"~W\", [f(x), [max_depth(2)]], A)",
    "len(f(x, y), [quoted(true)], L)",
    "show_with(fact(0))",
    "hello",
    "pr1(f('A'))",
    "to_peano(20000, P)",
    "length(L, 1500000)",
    "X = f(X)",
    "X = [a|X], Y = X",
    "atomic_list_concat([a, b, c], X)",
    "atomic_list_concat(L, ',', 'a,b')",
    "split_string(\"a b  c\", \" \", \"\", P)",
    "term_variables(f(X, Y, X), V)",
    "f(A, B) =@= f(C, D)",
    "f(A, A) =@= f(C, D)",
]

BATCH_ORACLE = r"""
:- initialization(main, main).
main :-
    current_prolog_flag(argv, Argv), append(_, [KB, Goals], Argv),
    load_files(KB, []),
    read_file_to_string(Goals, Text, []),
    split_string(Text, "\n", "", Lines),
    forall(( member(Line, Lines), Line \== "" ), snapshot(answer(Line))).
answer(Line) :-
    term_string(G, Line),
    catch(call_with_inference_limit(G, 2000000, R0), _, R0 = raised),
    !,
    ( R0 == raised -> R = raised ; R0 == inference_limit_exceeded -> R = limit ; R = true ),
    format("~n@@ ~w~n", [R]).
answer(_) :- format("~n@@ false~n").
"""
STATUS = {"true": "proved", "false": "failed", "raised": "unknown"}


def swipl_batch(kb, goals, tmp_path):
    """What plain swipl says to each goal on the KB (true, false, raised), each in a snapshot."""
    oracle = tmp_path / "batch_oracle.pl"
    oracle.write_text(BATCH_ORACLE)
    listed = tmp_path / "goals.txt"
    listed.write_text("".join(goal + "\n" for goal in goals))
    done = subprocess.run([swipl_path(), "-q", str(oracle), "--", str(kb), str(listed)], capture_output=True,
                          text=True, timeout=300)
    said = [line[3:] for line in done.stdout.splitlines() if line.startswith("@@ ")]
    assert len(said) == len(goals), done.stdout[-2000:] + done.stderr[-2000:]
    return said


def prove(kbcli, kb, goals, *extra):
    done = kbcli("kb", "prove", str(kb), *goals, "--format", "json", "--inferences", "2000000", "--time", "5",
                 *extra)
    assert done.returncode in (0, 1), done.stdout[-2000:] + done.stderr
    results = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(results) == len(goals)
    return results


@pytest.fixture
def kb(tmp_path):
    path = tmp_path / "rules.pl"
    path.write_text(RULES)
    return path


def test_goals_in_options_threads_and_engine_state_leave_no_trace_and_the_batch_answers_as_swipl(kbcli, kb,
                                                                                                tmp_path):
    """Hostile goals interleaved with plain ones in one batch: each hostile goal is unknown and leaves no
    marker; every plain goal after it (the forging goal's victims, X = 1, X = 2, among them) answers as
    plain swipl does."""
    assert len(HOSTILE) + len(PLAIN) >= 70
    marker = tmp_path / "M"
    hostile = [goal.replace("{m}", str(marker)) for goal in HOSTILE]
    plain = [goal.replace("{m}", str(marker)) for goal in PLAIN]
    goals = [goal for pair in zip(hostile, plain) for goal in pair] + plain[len(hostile):] + hostile[len(plain):]
    results = dict(zip(goals, prove(kbcli, kb, goals), strict=True))
    assert not marker.exists()
    for goal in hostile:
        assert results[goal]["status"] == "unknown", (goal, results[goal])
        assert results[goal]["reason"].startswith("refused by"), (goal, results[goal])
    for goal, said in zip(plain, swipl_batch(kb, plain, tmp_path), strict=True):
        assert said != "limit", goal
        assert results[goal]["status"] == STATUS[said], (goal, said, results[goal])
    assert not marker.exists()


def test_answers_too_large_deep_or_cyclic_are_shown_and_the_batch_goes_on(kbcli, kb):
    """The issue's batch: a 1,500,000-element answer and a 20,000-deep one are proved and shown cut (`...`
    for what was left out, the note saying so); a cyclic answer is shown as swipl's toplevel shows it;
    the goal after each is answered."""
    goals = ["length(L, 1500000)", "fact(0)", "to_peano(20000, P)", "fact(0)", "X = f(X)", "X = f(Y), Y = g(Y)",
             "fact(0)"]
    results = prove(kbcli, kb, goals)
    assert [r["status"] for r in results] == ["proved"] * len(goals)
    long, deep = results[0]["solutions"][0], results[2]["solutions"][0]
    assert long["bindings"]["L"].startswith("[_A, _B, _C") and long["bindings"]["L"].endswith("|...]")
    assert len(long["bindings"]["L"]) < 250_000 and "too large to show in full" in long["tree"]["clause"]
    assert deep["bindings"]["P"].startswith("s(s(s(") and "..." in deep["bindings"]["P"]
    assert len(deep["bindings"]["P"]) < 10_000 and deep["tree"]["goal"] == "to_peano(20000, P)"
    assert results[4]["solutions"][0]["bindings"] == {"X": "f(X)"}
    # A 3000-element answer is shown in full, with its tree, each node's goal cut to size.
    listed = prove(kbcli, kb, ["numlist(1, 3000, L), len(L, N)"], "--time", "30")[0]["solutions"][0]
    assert listed["bindings"]["L"].endswith(", 2999, 3000]"), listed["tree"]["clause"]

    def nodes(node):
        yield node
        for child in node["children"]:
            yield from nodes(child)
    goals = [node["goal"] for node in nodes(listed["tree"])]
    assert len(goals) > 60 and max(map(len, goals)) < 12_000 and all(g.endswith("|...], 3000)") for g in goals[2:3])
    cyclic = results[5]["solutions"][0]
    assert cyclic["bindings"] == {"X": "f(Y)", "Y": "g(Y)"} and "cyclic" in cyclic["tree"]["clause"]


def test_goal_text_that_is_not_utf8_is_that_goals_refusal(tmp_path, kb):
    """Bytes that are not UTF-8 on the command line (a real subprocess: argv bytes): that goal's one-line
    refusal, the other goals answered."""
    done = subprocess.run([".venv/bin/logicpipe", "kb", "prove", str(kb).encode(), b"fact(\xff)", b"fact(0)",
                           b"--format", b"json"], capture_output=True, timeout=120)
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert done.returncode == 1 and [r["status"] for r in lines] == ["unknown", "proved"], done.stderr
    assert "not valid UTF-8" in lines[0]["reason"] and b"Traceback" not in done.stderr
    alone = subprocess.run([".venv/bin/logicpipe", "kb", "prove", str(kb).encode(), b"fact(\xff)"],
                           capture_output=True, timeout=120)
    assert alone.returncode == 2 and alone.stderr.count(b"\n") == 1 and b"not valid UTF-8" in alone.stderr


def test_printing_from_a_rule_goes_to_a_bounded_stderr(kb, tmp_path):
    """write/1, print/1, nl/0 in a KB rule run (as in plain swipl) and print to the engine's stderr, of
    which only the last STDERR_KEPT bytes are kept however much a rule prints."""
    loud = tmp_path / "loud.pl"
    loud.write_text(RULES + "shout(N) :- forall(between(1, N, _), (write(xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx), nl)).\n")
    with KnowledgeBase(loud) as base:
        assert base.prove("hello")["status"] == "proved"
        assert b"hello\nworld\n'it\\'s'\n" in base.process.stderr_tail
        assert base.prove("shout(100000)")["status"] == "proved"            # 5 MB printed
        assert len(base.process.stderr_tail) <= STDERR_KEPT
        assert base.process.stderr_tail.endswith(b"xxxxxxxx\nxxxxxxxx" + b"x" * 41 + b"\n")
        assert base.prove("fact(0)")["status"] == "proved"


def test_an_engine_error_on_one_goal_is_that_goals_unknown_and_the_next_runs_on_a_fresh_engine(kb):
    with KnowledgeBase(kb) as base:
        before = base.process._process.pid
        broken = base.process.request
        calls = []

        def failing(payload, timeout=30.0):  # the engine answers this one prove with an error reply
            if payload["op"] == "prove" and not calls:
                calls.append(payload)
                return broken({"op": "no such op"}, timeout)
            return broken(payload, timeout)

        base.process.request = failing  # type: ignore[method-assign]
        first = base.prove("fact(0)")
        assert first["status"] == "unknown" and first["reason"].startswith("the engine failed on this goal")
        assert base.process._process.pid != before
        assert base.prove("fact(0)")["status"] == "proved"


@pytest.mark.slow
def test_the_time_limit_holds_for_a_long_builtin(kb, tmp_path):
    """A rule building a 800 MB atom (20 s to 70 s here) sees Prolog's own time limit only once it is built:
    Python waits the limit plus GRACE_SECONDS, then replaces the engine."""
    big = tmp_path / "big.pl"
    big.write_text(RULES + "pad(N, A) :- format(atom(A), \"~*c\", [N, 0'a]).\n")
    with KnowledgeBase(big, limits=ProofLimits(seconds=1.0, memory_mb=2048)) as base:
        start = time.monotonic()
        result = base.prove("pad(800000000, A), atom_length(A, L)")
        waited = time.monotonic() - start
        assert result["status"] == "unknown" and result["limit"] == "time", result
        assert waited < 1.0 + GRACE_SECONDS + 4, waited   # the restart reloads the KB
        assert base.prove("fact(0)")["status"] == "proved"


def test_threads_cannot_be_allowed_by_name(kbcli, kb):
    """thread_create/3 is a meta-predicate: --allow cannot declare it safe, and says so in one line."""
    done = kbcli("kb", "prove", str(kb), "spawn(fact(0))", "--allow", "thread_create/3")
    assert done.returncode == 2 and done.stderr.startswith("error: --allow thread_create/3: not a builtin")


def test_a_jailed_shell_is_refused_not_reported_as_run(kbcli, tmp_path):
    """In the jail SWI-Prolog's shell/2 cannot fork, raises without failing and binds status 0, so
    `ok(false)` was proved (found by a red-team session that had not seen the code). Allowing a
    process-starting builtin in the jail is refused in one line; without the jail the command runs."""
    from logicpipe.core import jail

    if not jail.status().active:
        pytest.skip(f"no OS jail here: {jail.status().reason}")
    kb = tmp_path / "sh.pl"
    kb.write_text("ok(C) :- shell(C, 0).\n")
    for allowed in ("shell/2", "shell/1", "shell/0"):
        done = kbcli("kb", "prove", str(kb), "ok(false)", "--allow", allowed)
        assert done.returncode == 2 and done.stderr.startswith(f"error: --allow {allowed}: the OS jail"), done
    free = kbcli("kb", "--no-jail", "prove", str(kb), "ok(false)", "ok(true)", "--allow", "shell/2")
    assert "no: not derivable" in free.stdout and "yes" in free.stdout, free.stdout


def test_kb_check_loads_with_threads_off_as_the_engine_does(kbcli, tmp_path):
    """kb check's loader ran without --threads=false, so a directive could start a Prolog thread there
    (found by a red-team session that had not seen the code)."""
    kb = tmp_path / "t.pl"
    kb.write_text(":- thread_create(assertz(ran(yes)), I, []), thread_join(I, _).\np(1).\n")
    done = kbcli("kb", "check", str(kb))
    assert "threading disabled" in done.stdout + done.stderr, done.stdout + done.stderr
    assert "ran/1" not in done.stdout


def test_hostile_options_through_ask_and_validate(kbcli, kb, tmp_path):
    marker = tmp_path / "M"
    goals = {f"h{i}": goal.replace("{m}", str(marker)) for i, goal in enumerate(HOSTILE)}
    goals.update(fine="render(x, S, [quoted(true)])", cyclic="X = f(X)", deep="to_peano(20000, P)",
                 after="X = 1, X = 2")
    questions = tmp_path / "q.jsonl"
    questions.write_text("".join(json.dumps({"id": k, "question": k}) + "\n" for k in goals))
    answers = tmp_path / "a.jsonl"
    answers.write_text("".join(json.dumps({"id": k, "answer": k}) + "\n" for k in goals))
    with FakeOpenAI(_reply(goals)) as server:
        model = ["--model", "fake", "--base-url", server.url]
        asked = kbcli("kb", "ask", str(kb), "--questions", str(questions), "--out", str(tmp_path / "ask"), *model)
        checked = kbcli("kb", "validate", str(kb), "--answers", str(answers), "--out", str(tmp_path / "val"),
                        *model)
    assert asked.returncode == 0 and checked.returncode == 0, asked.stderr + checked.stderr
    assert not marker.exists()
    records = {r.id: r for r in (AskRecord.model_validate_json(line)
                                 for line in (tmp_path / "ask" / "ask.jsonl").read_text().splitlines())}
    assert [r["status"] for r in records.pop("fine").results] == ["proved"]
    assert [r["status"] for r in records.pop("cyclic").results] == ["proved"]
    assert [r["status"] for r in records.pop("deep").results] == ["proved"]
    assert [r["status"] for r in records.pop("after").results] == ["failed"]
    for record in records.values():
        statuses = [r["status"] for r in record.results]
        assert statuses in ([], ["unknown"]) and (statuses or record.rejected), record
    claims = {r["id"]: r["claims"][0]["verdict"]
              for r in map(json.loads, (tmp_path / "val" / "validate.jsonl").read_text().splitlines())}
    assert (claims.pop("fine"), claims.pop("cyclic"), claims.pop("deep")) == ("true", "true", "true")
    assert claims.pop("after") != "true"
    assert set(claims.values()) <= {"unknown", "untranslatable"}
