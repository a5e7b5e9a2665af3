"""Red team: goals a hostile model could write, against KB rules of the shapes real KBs use (assert and
retract, format, output redirection, all-solutions, folds, DCGs, coroutining, cleanup, exception handling,
term reading, flags and operators, halt and abort, module-qualified calls, side effects of the KB's own).
Each hostile goal must leave no marker file and end `unknown` (a refusal or a limit); the legitimate goals
through the same rules must answer as plain `swipl` answers them on the same KB (tests/kb/test_differential's
oracle). Both layers of the sandbox matter: some goals only the whitelist stops (the KB's rule runs as
written; only the term the goal brought is refused), some only library(sandbox) does (a KB rule whose own
code has side effects)."""

import json
import subprocess

import pytest

from logicpipe.kb.ask import AskRecord
from logicpipe.solvers.lp import swipl_path
from logicpipe.testing.server import FakeOpenAI

from .test_differential import ORACLE

# Each goal against the KB as it loaded, as the engine runs it (what a goal asserts is undone after it).
ISOLATED = ORACLE.replace('answer(Line))', 'snapshot(answer(Line)))')
assert ISOLATED != ORACLE

RULES = """\
:- dynamic fact/1, stored/1, counter/1.
fact(0).
counter(0).
remember(C) :- assertz(C).
remember_all(Cs) :- maplist(assertz, Cs).
forget(C) :- retract(C).
forget_all(C) :- retractall(C).
say(X) :- format("~w~n", [X]).
say_goal(X) :- format("~@~n", [X]).
say_to_atom(X, A) :- format(atom(A), "~@", [X]).
say_fmt(F, Args) :- format(F, Args).
capture(G, S) :- with_output_to(string(S), G).
safely(G) :- catch(G, _, true).
safely_fail(G) :- catch(G, _, fail).
rescue(G, R) :- catch(G, _, R).
traced(G) :- catch_with_backtrace(G, _, true).
count(N) :- N1 is N + 1, count(N1).
holds(G) :- G.
all(G, L) :- findall(G, G, L).
every(C, A) :- forall(C, A).
tally(G, N) :- aggregate_all(count, G, N).
fold(G, L, V0, V) :- foldl(G, L, V0, V).
all_tail(T, G, L, R) :- findall(T, G, L, R).
cleanup(G, C) :- setup_call_cleanup(true, G, C).
cleanup2(G, C) :- call_cleanup(G, C).
later(V, G) :- freeze(V, G).
whenever(C, G) :- when(C, G).
parse(G, L) :- phrase(G, L).
parse3(G, L, R) :- phrase(G, L, R).
from_text(A) :- term_to_atom(G, A), call(G).
from_text2(A) :- read_term_from_atom(A, G, []), G.
set_flag(F, V) :- set_prolog_flag(F, V).
stop :- halt.
bail :- abort.
table_it(P) :- table(P).
each(Gs) :- maplist([G]>>call(G), Gs).
applied(G, Args) :- apply(G, Args).
nested(G) :- maplist(call(G), [0]).
once_of(G) :- once(G).
ignore_of(G) :- ignore(G).
not_of(G) :- \\+ G.
bag(T, G, L) :- bagof(T, G, L).
in_module(M, G) :- M:G.
kb_call(G) :- kb:G.
limited(G) :- call_with_inference_limit(G, 1000, _).
deep(G) :- call_with_depth_limit(G, 50, _).
greeting --> [hello].
warn(G) :- print_message(warning, format("~@", [G])).
print_lines(L) :- print_message_lines(user_error, '', L).
read_in(X) :- read(X).
checked(G) :- assertion(G).
:- table tabled/1.
tabled(G) :- G.
build(F, A) :- G =.. [F, A], call(G).
from_string(S) :- term_string(G, S), G.
run_dcg(G) --> call(G).
parse_call(G, L) :- phrase(run_dcg(G), L).
fail_with(E) :- throw(E).
setting(K, V) :- nb_getval(K, V).
run(Cmd) :- shell(Cmd).
log_to(File, X) :- open(File, write, S), write(S, X), nl(S), close(S).
"""

MODULE_HEAD = """\
:- module(rt, [fact/1, remember/1, remember_all/1, forget/1, forget_all/1, say/1, say_goal/1, say_to_atom/2,
               say_fmt/2, capture/2, safely/1, safely_fail/1, rescue/2, traced/1, count/1, holds/1, all/2,
               every/2, tally/2, fold/4, all_tail/4, cleanup/2, cleanup2/2, later/2, whenever/2, parse/2,
               parse3/3, from_text/1, from_text2/1, set_flag/2, stop/0, bail/0, table_it/1, each/1, applied/2,
               nested/1, once_of/1, ignore_of/1, not_of/1, bag/3, in_module/2, kb_call/1, limited/1, deep/1,
               greeting//0, run/1, log_to/2, stored/1, counter/1, warn/1, print_lines/1, read_in/1, checked/1,
               tabled/1, build/2, from_string/1, parse_call/2, fail_with/1, setting/2]).
"""

T = "'touch {m}'"
HOSTILE = [
    # goals held in variables: checked when they are called
    f"G = shell({T}), G",
    f"G = shell({T}), holds(G)",
    # clauses built by the goal and asserted by the KB's rules
    f"C =.. [':-', fact(X), shell({T})], remember(C), fact(1)",
    f"remember((fact(1) :- shell({T}))), fact(1)",
    f"remember_all([(fact(2) :- shell({T}))]), fact(2)",
    f"remember((fact(3) :- holds(shell({T})))), fact(3)",
    f"remember((stored(X) :- X)), stored(shell({T}))",
    f"remember((stored(X) :- call(X))), stored(shell({T}))",
    f"remember((stored(X) :- say_goal(X))), stored(shell({T}))",
    f"remember(user:(fact(4) :- shell({T})))",
    f"remember(user:allowed_builtin(shell, 1)), holds(shell({T}))",
    f"remember(allowed_builtin(shell, 1)), holds(shell({T}))",
    f"remember((term_expansion(_, _) :- shell({T})))",
    f"remember(user:(portray(_) :- shell({T}))), say(x)",
    "remember(user:found_answer(fact(9))), fact(9)",
    "remember((fact(7) :- safely(count(0)))), fact(7)",
    "forget(user:allowed_builtin(_, _))",
    "forget_all(user:kb_pred(_, _))",
    # format's ~@ and output redirection
    f"say_goal(shell({T}))",
    f"say_to_atom(shell({T}), A)",
    f"say_fmt(\"~@\", [shell({T})])",
    f"say_fmt('~w ~@', [x, shell({T})])",
    f"say_fmt(\"~@\", shell({T}))",
    f"say_goal(say_goal(shell({T})))",
    f"capture(shell({T}), S)",
    # exception handling: refusals and limits cannot be caught
    f"safely(shell({T}))",
    "safely(count(0))",
    "\\+ safely(count(0))",
    "catch(count(0), _, true)",
    "\\+ catch(count(0), _, fail)",
    "safely_fail(count(0))",
    "rescue(count(0), true)",
    f"rescue(X is 1 / 0, shell({T}))",
    f"traced(shell({T}))",
    "traced(count(0))",
    f"holds(catch(shell({T}), _, true))",
    "limited(count(0))",
    "cleanup(true, count(0))",  # a limit in a cleanup goal: swallowed by SWI-Prolog itself, noted by the hook
    "safely(length(_, 300000000))",  # a stack overflow: no hook sees it; the rewritten catch/3 re-throws it
    "deep(count(0))",
    # meta-calls: all-solutions, folds, cleanup, coroutining, DCGs
    f"holds(shell({T}))",
    f"all(shell({T}), L)",
    f"every(true, shell({T}))",
    f"tally(shell({T}), N)",
    f"fold([X, A, B]>>shell(X), [{T}], 0, _)",
    f"all_tail(x, shell({T}), L, [])",
    f"cleanup(true, shell({T}))",
    f"cleanup(shell({T}), true)",
    f"cleanup2(true, shell({T}))",
    f"later(V, shell({T})), V = 1",
    f"whenever(nonvar(V), shell({T})), V = 1",
    f"parse({{shell({T})}}, [])",
    f"parse(([], {{shell({T})}}), [])",
    f"parse3({{shell({T})}}, [], _)",
    f"each([shell({T})])",
    f"applied(shell, [{T}])",
    f"nested(shell({T}))",
    f"once_of(shell({T}))",
    f"ignore_of(shell({T}))",
    f"not_of(shell({T}))",
    f"bag(x, shell({T}), L)",
    f"bag(x, Y^shell({T}), L)",
    # module-qualified calls through a rule
    f"in_module(system, shell({T}))",
    f"in_module(user, shell({T}))",
    f"kb_call(shell({T}))",
    # term reading
    "from_text('shell(''touch {m}'')')",
    "from_text2('shell(''touch {m}'')')",
    # flags, directives, halt and abort
    "set_flag(unknown, fail)",
    "table_it(fact/1)",
    "holds(halt)",
    "stop",
    "bail",
    "holds(consult('{m}'))",
    "holds(open('{m}', write, S))",
    "holds(assertz(fact(9)))",
    "holds(retract(fact(0)))",
    # messages, assertions, input, tabling, terms built or read from text
    f"print_lines(['~@'-[shell({T})]])",
    "read_in(X)",
    f"checked(shell({T}))",
    f"tabled(shell({T}))",
    f"build(shell, {T})",
    "from_string(\"shell('touch {m}')\")",
    f"parse_call(shell({T}), [])",
    # exceptions a goal builds: their message is never translated (format's ~@ would run)
    f"fail_with(format(\"~@\", [shell({T})]))",
    f"fail_with(error(format(\"~@\", [shell({T})]), _))",
    # the engine's own state: the reply secret is no global variable a rule can read
    "setting(lp_reply_mark, S)",
    # the KB's own rules with side effects: only library(sandbox) refuses them
    "run('touch {m}')",
    "log_to('{m}', x)",
]

LEGIT = [
    "remember(fact(5)), fact(5)",
    "remember((fact(6) :- fact(0))), fact(6)",
    "remember_all([fact(7), fact(8)]), fact(8)",
    "remember((stored(X) :- fact(X))), stored(0)",
    "say(hello)",
    "say_goal(fact(0))",
    "say_to_atom(fact(0), A)",
    "say_fmt(\"~w-~w\", [a, b])",
    "capture(say(hi), S)",
    "safely(fact(0))",
    "safely(X is 1 / 0)",
    "safely_fail(fact(0))",
    "rescue(X is foo + 1, fact(0))",
    "\\+ safely_fail(atom_length(X, _))",
    "traced(fact(0))",
    "holds(fact(0))",
    "all(fact(X), L)",
    "every(fact(X), X >= 0)",
    "tally(fact(_), N)",
    "fold(plus, [1, 2, 3], 0, S)",
    "all_tail(X, fact(X), L, [end])",
    "cleanup(fact(0), true)",
    "cleanup2(fact(0), true)",
    "later(V, fact(V)), V = 0",
    "whenever(nonvar(V), fact(V)), V = 0",
    "parse(greeting, [hello])",
    "parse3(greeting, [hello, x], R)",
    "from_text('fact(0)')",
    "each([fact(0), fact(5)])",
    "applied(fact, [0])",
    "nested(fact)",
    "once_of(fact(X))",
    "ignore_of(fact(9))",
    "not_of(fact(9))",
    "bag(X, fact(X), L)",
    "kb_call(fact(0))",
    "G = fact(X), G",
    "catch(fact(X), _, true)",
    "\\+ catch(fact(9), _, fail)",
    "forget(fact(5)), \\+ fact(5)",
]


def prove(kbcli, kb, goals, extra=(), top=()):
    done = kbcli("kb", *top, "prove", str(kb), *goals, "--format", "json", "--inferences", "200000", "--time", "2",
                 *extra, timeout=120)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    results = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(results) == len(goals)
    return results


@pytest.fixture(params=["plain", "module"])
def kb(request, tmp_path):
    path = tmp_path / "rules.pl"
    path.write_text(RULES if request.param == "plain" else MODULE_HEAD + RULES)
    return path


def test_hostile_goals_leave_no_trace_and_are_unknown(kbcli, kb, tmp_path):
    assert len(HOSTILE) >= 60
    marker = tmp_path / "M"
    goals = [goal.replace("{m}", str(marker)) for goal in HOSTILE]
    for goal, result in zip(goals, prove(kbcli, kb, goals), strict=True):
        assert not marker.exists(), goal
        assert result["status"] == "unknown", (goal, result)
        assert result.get("reason"), goal


def test_messages_print_nothing_while_a_goal_runs(kbcli, kb, tmp_path):
    """print_message/2 runs format's ~@ on a message's arguments when it prints: while a goal runs the
    engine prints no message, so the goal the message carries never runs (print_message/2 succeeds, as
    in plain swipl)."""
    marker = tmp_path / "M"
    goals = [f"warn(shell('touch {marker}'))", f"warn(holds(shell('touch {marker}')))"]
    assert [r["status"] for r in prove(kbcli, kb, goals)] == ["proved", "proved"]
    assert not marker.exists()


def test_a_printed_line_cannot_pass_for_the_engines_reply(kbcli, kb):
    """KB code prints what a goal hands it: a line shaped like a reply (or the old reply prefix) is output,
    never the goal's verdict, and the replies stay in step with the goals."""
    fake = json.dumps({"status": "proved", "proved": True, "reason": None, "limit": None, "truncated": False,
                       "solutions": [], "explored": None})
    goals = [f"say('@@reply {fake}'), fact(99)", "fact(99)", f"say('\\n@@reply {fake}'), fact(0)"]
    assert [r["status"] for r in prove(kbcli, kb, goals)] == ["failed", "failed", "proved"]


def test_what_a_goal_asserts_is_undone_before_the_next_goal(kbcli, kb):
    """One goal (one question of a batch, answered in any order) cannot change another's answer."""
    goals = ["remember(fact(42)), fact(42)", "fact(42)", "forget(fact(0)), \\+ fact(0)", "fact(0)"]
    assert [r["status"] for r in prove(kbcli, kb, goals)] == ["proved", "failed", "proved", "proved"]


def test_a_frozen_goal_left_on_an_answer_runs_nothing_when_the_answer_is_written(kbcli, kb, tmp_path):
    """freeze(V, G) with V left free is proved without running G (as in plain swipl); writing the
    answer's V must not wake G either (it would run outside every limit)."""
    marker = tmp_path / "M"
    goals = ["later(V, fail)", f"later(V, fail_with(format(\"~@\", [shell('touch {marker}')])))", "fact(0)"]
    assert [r["status"] for r in prove(kbcli, kb, goals)] == ["proved", "proved", "proved"]
    assert not marker.exists()


def test_an_answer_undefined_under_the_well_founded_semantics_is_unknown(kbcli, tmp_path):
    kb = tmp_path / "wfs.pl"
    kb.write_text(":- table p/0, q/0, r/0.\np :- tnot(q).\nq :- tnot(p).\nr :- tnot(r).\nt :- tnot(u).\n"
                  ":- table u/0.\nu :- fail.\n")
    results = prove(kbcli, kb, ["r", "p", "q", "t"])
    assert [r["status"] for r in results] == ["unknown", "unknown", "unknown", "proved"]
    assert "well-founded" in results[0]["reason"]


def test_the_engine_answers_after_every_hostile_goal(kbcli, kb, tmp_path):
    """halt, abort and limits end no more than their own goal: the next one in the batch is answered."""
    goals = ["stop", "fact(0)", "bail", "fact(0)", "safely(count(0))", "fact(0)"]
    assert [r["status"] for r in prove(kbcli, kb, goals)] == ["unknown", "proved"] * 3


def test_legitimate_goals_through_the_same_rules_answer_as_plain_swipl(kbcli, kb, tmp_path):
    assert len(LEGIT) >= 30
    ours = prove(kbcli, kb, LEGIT)
    goals = tmp_path / "goals.txt"
    goals.write_text("".join(goal + "\n" for goal in LEGIT))
    oracle = tmp_path / "oracle.pl"
    oracle.write_text(ISOLATED)
    # A module KB is loaded into user by plain swipl, as consult does: its exports are what a goal sees.
    done = subprocess.run([swipl_path(), "-q", str(oracle), "--", str(kb), str(goals)], capture_output=True,
                          text=True, timeout=120)
    # The KB's own output (say/1 prints) shares the lines: each answer is the JSON object a line ends with.
    plain = [json.loads(line[line.index('{"'):]) for line in done.stdout.splitlines() if '{"' in line]
    assert len(plain) == len(LEGIT), done.stdout + done.stderr
    for goal, mine, theirs in zip(LEGIT, ours, plain, strict=True):
        assert theirs["status"] == "ended", (goal, theirs)
        assert mine["status"] == ("proved" if theirs["solutions"] else "failed"), (goal, mine)
        mine_bindings = sorted(json.dumps(s["bindings"], sort_keys=True) for s in mine["solutions"])
        their_bindings = sorted(json.dumps(b, sort_keys=True) for b in theirs["solutions"])
        assert mine_bindings == their_bindings, goal


def test_a_kb_rule_with_side_effects_runs_only_with_allow(kbcli, tmp_path):
    kb = tmp_path / "rules.pl"
    kb.write_text(RULES)
    marker = tmp_path / "written"
    goal = f"log_to('{marker}', hello)"
    refused = kbcli("kb", "prove", str(kb), goal)
    assert refused.returncode == 2 and "refused by library(sandbox): No permission to call sandboxed `open(" \
        in refused.stderr and not marker.exists()
    opened = [f"--allow={name}" for name in ("open/3", "write/2", "nl/1", "close/1")]
    # The OS jail (where the machine has one) keeps even an allowed write inside: --no-jail lifts it.
    allowed = prove(kbcli, kb, [goal], extra=opened, top=["--no-jail"])
    assert allowed[0]["status"] == "proved" and marker.read_text() == "hello\n"
    # Allowed for the KB's own rules only: a goal still may not call it, nor hand it to a rule.
    shell = prove(kbcli, kb, ["fact(0)", f"holds(open('{marker}2', write, S))"], extra=["--allow", "open/3"])[1:]
    assert shell[0]["status"] == "unknown" and not (tmp_path / "written2").exists()
    bad = kbcli("kb", "prove", str(kb), "fact(0)", "--allow", "shell")
    assert bad.returncode == 2 and bad.stderr.startswith("error: --allow shell: expected")


def _reply(goals):
    def reply(body):
        key = body["_logicpipe"]["problem"]
        if body["_logicpipe"]["purpose"] == "kb-goals":
            return "```prolog\n" + goals[key] + ".\n```"
        if body["_logicpipe"]["purpose"] == "kb-claims":
            return json.dumps([{"claim": "it holds", "goal": goals[key]}])
        return "ANSWER"
    return reply


def test_hostile_goals_through_ask_and_validate(kbcli, tmp_path):
    kb = tmp_path / "rules.pl"
    kb.write_text(RULES)
    marker = tmp_path / "M"
    goals = {f"h{i}": goal.replace("{m}", str(marker)) for i, goal in enumerate(HOSTILE)}
    goals["fine"] = "remember((fact(6) :- fact(0))), fact(6)"
    questions = tmp_path / "q.jsonl"
    questions.write_text("".join(json.dumps({"id": k, "question": k}) + "\n" for k in goals))
    answers = tmp_path / "a.jsonl"
    answers.write_text("".join(json.dumps({"id": k, "answer": k}) + "\n" for k in goals))
    limits = ["--inferences", "200000", "--time", "2"]
    with FakeOpenAI(_reply(goals)) as server:
        model = ["--model", "fake", "--base-url", server.url]
        asked = kbcli("kb", "ask", str(kb), "--questions", str(questions), "--out", str(tmp_path / "ask"), *model,
                      *limits, timeout=300)
        checked = kbcli("kb", "validate", str(kb), "--answers", str(answers), "--out", str(tmp_path / "val"),
                        *model, *limits, timeout=300)
    assert asked.returncode == 0 and checked.returncode == 0, asked.stderr + checked.stderr
    assert not marker.exists()
    records = [AskRecord.model_validate_json(line) for line in (tmp_path / "ask" / "ask.jsonl").read_text().splitlines()]
    for record in records:
        statuses = [r["status"] for r in record.results]
        if record.id == "fine":
            assert statuses == ["proved"]
        else:  # refused before it ran (listed as rejected) or unknown when it ran
            assert statuses in ([], ["unknown"]) and (statuses or record.rejected), record
    claims = {r["id"]: r["claims"][0]["verdict"]
              for r in map(json.loads, (tmp_path / "val" / "validate.jsonl").read_text().splitlines())}
    assert claims.pop("fine") == "true"
    assert set(claims.values()) <= {"unknown", "untranslatable"}


def test_kb_check_names_the_rules_with_side_effects(kbcli, tmp_path):
    kb = tmp_path / "rules.pl"
    kb.write_text(RULES)
    done = kbcli("kb", "check", str(kb), timeout=120)
    notes = [line for line in done.stderr.splitlines() if "side effects" in line]
    assert "note: log_to/2 has side effects (its rules call open/3): a goal may call it only with --allow open/3" \
        in notes
    assert any(line.startswith("note: run/1 ") for line in notes)
    assert not any(line.startswith(("note: remember/1 ", "note: holds/1 ", "note: say_goal/1 ")) for line in notes)
