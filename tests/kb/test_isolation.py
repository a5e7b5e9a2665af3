"""No goal changes another's answer, and nothing a goal does to catch or hide a limit, an exception or an
undefined answer makes it true or false. Each goal of a `kb prove` is held against the same goal proved
alone, and against plain swipl on the same KB where swipl gives a definite answer (the red-team findings
of 2026-12-05: a thrown `ok`, flags, predicates an assert created, percepts, files the KB loads, and
undefined tabled answers read through findall or negation)."""

import json

import pytest

from logicpipe.kb.knowledge import KnowledgeBase, parse_percept
from tests.kb.oracle import STATUS, swipl_says


def statuses(kbcli, kb, *goals):
    done = kbcli("kb", "prove", str(kb), *goals, "--format", "json", "--time", "5")
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(replies) == len(goals), done.stderr
    return [reply["status"] for reply in replies]


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_thrown_ok_is_no_finished_search(kbcli, tmp_path):
    kb = write(tmp_path, "thr.pl", "fact(0).\nfact(1).\nfail_with(E) :- throw(E).\n")
    goals = ["fact(X), fact(Y), Y > X, fail_with(ok)", "fail_with(ok)"]
    assert [swipl_says(kb, goal) for goal in goals] == ["raised", "raised"]
    assert statuses(kbcli, kb, *goals) == ["unknown", "unknown"]
    done = kbcli("kb", "prove", str(kb), "(fact(X) ; fail_with(ok))", "--format", "json")
    reply = json.loads(done.stdout)
    assert reply["truncated"] is True and "raised ok" in reply["reason"]  # two answers, then the exception


@pytest.mark.parametrize("rules,setter,goal,alone", [
    ("third(X, Y) :- set_prolog_flag(prefer_rationals, true), Y is X / 3.\n", "third(3, _)",
     "X is 1 / 2, X == 0.5", "true"),
    ("atoms :- set_prolog_flag(double_quotes, atom).\n", "atoms", "X = \"abc\", string(X)", "true"),
    ("occurs :- set_prolog_flag(occurs_check, true).\n", "occurs", "\\+ X = f(X)", "false"),
])
def test_a_flag_a_goal_sets_does_not_reach_the_next_goal(kbcli, tmp_path, rules, setter, goal, alone):
    kb = write(tmp_path, "flags.pl", rules)
    assert swipl_says(kb, goal) == alone
    verdict = STATUS[alone]
    assert statuses(kbcli, kb, goal, setter, goal) == [verdict, "proved", verdict]


def test_a_predicate_an_assert_created_is_gone_for_the_next_goal(kbcli, tmp_path):
    kb = write(tmp_path, "leak.pl", "note(X) :- assertz(seen(X)).\nwas_seen(X) :- seen(X).\n")
    assert swipl_says(kb, "was_seen(b)") == "raised"  # seen/1 does not exist
    assert statuses(kbcli, kb, "was_seen(b)", "note(a)", "was_seen(b)", "\\+ was_seen(b)") == \
        ["unknown", "proved", "unknown", "unknown"]


def test_a_percept_of_one_goal_leaves_the_kbs_own_facts_for_the_next(tmp_path):
    kb = write(tmp_path, "perc.pl", ":- dynamic p_weather/1.\np_weather(rainy).\nwet :- p_weather(rainy).\n")
    assert swipl_says(kb, "wet") == "true"
    base = KnowledgeBase(kb)
    try:
        seen = [base.prove("wet")["status"], base.prove("wet", [parse_percept("p_weather=sunny")])["status"],
                base.prove("wet")["status"]]
    finally:
        base.close()
    assert seen == ["proved", "failed", "proved"]


HELPERS = """\
holds(G) :- G.
shallow(G) :- call_with_depth_limit(G, 20, _).
chain(0) :- !.
chain(N) :- N1 is N - 1, chain(N1).
"""


def test_rules_in_a_file_the_kb_loads_are_guarded_as_its_own(kbcli, tmp_path):
    (tmp_path / "inc").mkdir()
    loads = write(tmp_path, "inc/main.pl", ":- ensure_loaded(helpers).\n:- use_module(library(lists)).\nfact(0).\n")
    write(tmp_path, "inc/helpers.pl", HELPERS)
    inline = write(tmp_path, "inline.pl", HELPERS + "fact(0).\n")
    marker = tmp_path / "pwned"
    goals = ["holds(set_prolog_flag(double_quotes, atom))", "holds(assertz(newpred(1)))",
             f"holds(open('{marker}', write, _))", "shallow(chain(100))", "\\+ shallow(chain(100))",
             "holds(fact(0))", "sum_list([1, 2], 3)"]
    expected = ["unknown"] * 5 + ["proved", "proved"]
    assert statuses(kbcli, inline, *goals) == expected
    assert statuses(kbcli, loads, *goals) == expected
    assert not marker.exists()


WFS = """\
:- table reach/2.
reach(X, Y) :- reach(X, Z), edge(Z, Y).
reach(X, Y) :- edge(X, Y).
edge(a, b). edge(b, c). edge(c, d). edge(d, e).
cap :- set_prolog_flag(max_answers_for_subgoal, 2), set_prolog_flag(max_answers_for_subgoal_action, bounded_rationality).
:- table r/0.
r :- tnot(r).
"""


def test_an_undefined_tabled_answer_read_through_negation_or_findall_is_unknown(kbcli, tmp_path):
    kb = write(tmp_path, "wfs.pl", WFS)
    # The oracle: plain swipl's residual program says r is undefined (a delay, not true).
    assert swipl_says(kb, "call_delays(r, D), D \\== true") == "true"
    hidden = ["\\+ r", "findall(x, r, [x])", "forall(true, r)", "aggregate_all(count, r, 1)",
              "cap, findall(Y, reach(a, Y), L)", "cap, \\+ reach(a, e)"]
    assert statuses(kbcli, kb, "r", *hidden) == ["unknown"] * (1 + len(hidden))
    # The answer limit the goal set does not outlive it: the next goal's tabling is complete again.
    assert statuses(kbcli, kb, "cap, \\+ reach(a, e)", "reach(a, e)") == ["unknown", "proved"]
    assert swipl_says(kb, "reach(a, e)") == "true"


def test_an_undefined_answer_in_a_module_the_kb_loads_is_unknown(kbcli, tmp_path):
    write(tmp_path, "mt.pl", ":- module(mt, [p/0]).\n:- table q/0.\nq :- tnot(q).\np :- \\+ q.\n")
    kb = write(tmp_path, "main.pl", ":- use_module(mt).\ntop :- p.\n")
    assert swipl_says(kb, "call_delays(mt:q, D), D \\== true") == "true"
    assert swipl_says(kb, "top") == "false"  # plain swipl's \+ reads undefined as false
    assert statuses(kbcli, kb, "top") == ["unknown"]


def test_a_tabling_limit_the_kb_set_is_named_as_such(kbcli, tmp_path):
    kb = write(tmp_path, "limit.pl", WFS.replace("cap :-", ":- set_prolog_flag(max_answers_for_subgoal, 2).\ncap :-"))
    assert swipl_says(kb, "findall(Y, reach(a, Y), L)") == "raised"
    done = kbcli("kb", "prove", str(kb), "findall(Y, reach(a, Y), L)", "--format", "json")
    reply = json.loads(done.stdout)
    assert reply["status"] == "unknown" and "max_answers_for_subgoal" in reply["reason"], reply


def test_a_rule_of_a_loaded_file_is_labelled_as_the_kb_file_is_named(kbcli, tmp_path, monkeypatch):
    (tmp_path / "inc").mkdir()
    write(tmp_path, "inc/main.pl", ":- ensure_loaded(helpers).\nfact(0).\n")
    write(tmp_path, "inc/helpers.pl", HELPERS)
    monkeypatch.chdir(tmp_path)
    done = kbcli("kb", "prove", "inc/main.pl", "holds(fact(0))", "--format", "json")
    tree = json.loads(done.stdout)["solutions"][0]["tree"]
    assert (tree["clause"], tree["children"][0]["clause"]) == ("inc/helpers.pl:1", "inc/main.pl:2")


def test_no_goal_reaches_the_saved_flags_or_leaves_a_predicate_in_a_module_or_under_a_dollar_name(kbcli, tmp_path):
    # nb_getval/2 and nb_setarg/3 are sandbox-safe: saved flags held in a global variable could be
    # edited in place. Predicates an assert creates in a module KB, or under a name starting with $,
    # must go as those in kb do.
    poison = write(tmp_path, "gv.pl", "poison :- catch(nb_getval(lp_flags, Fs), _, fail), member(E, Fs), "
                                      "E = (occurs_check-_), nb_setarg(2, E, true).\n")
    assert statuses(kbcli, poison, "\\+ X = f(X)", "poison", "\\+ X = f(X)") == ["failed", "failed", "failed"]
    module = write(tmp_path, "modk.pl", ":- module(m, [note/1, was_seen/1]).\nnote(X) :- assertz(seen(X)).\n"
                                        "was_seen(X) :- seen(X).\n")
    assert swipl_says(module, "was_seen(b)") == "raised"
    assert statuses(kbcli, module, "was_seen(b)", "note(a)", "was_seen(b)") == ["unknown", "proved", "unknown"]
    dollar = write(tmp_path, "dollar.pl", "note :- assertz('$seen'(1)).\nwas :- '$seen'(_).\n")
    assert swipl_says(dollar, "was") == "raised"
    assert statuses(kbcli, dollar, "was", "note", "was") == ["unknown", "proved", "unknown"]


def test_a_tabling_limit_that_drops_answers_silently_makes_the_search_unknown(kbcli, tmp_path):
    kb = write(tmp_path, "drop.pl", ":- set_prolog_flag(max_table_answer_size, 2).\n"
                                    ":- set_prolog_flag(max_table_answer_size_action, fail).\n"
                                    ":- table l/1.\nl([]).\nl([a|T]) :- l(T), length(T, N), N < 6.\n")
    assert statuses(kbcli, kb, "l(X), length(X, 6)", "\\+ (l(X), length(X, 6))") == ["unknown", "unknown"]


def test_negation_binds_none_of_the_answers_variables(kbcli, tmp_path):
    kb = write(tmp_path, "neg.pl", "fact(0).\nfact(3).\n")
    done = kbcli("kb", "prove", str(kb), "\\+ \\+ fact(X)", "\\+ (fact(X), X > 5)", "--format", "json")
    for line in done.stdout.splitlines():
        reply = json.loads(line)
        assert reply["status"] == "proved" and reply["solutions"][0]["bindings"] == {"X": "X"}, reply  # left free


def test_a_tabling_limit_a_rule_lifts_again_before_the_end_still_makes_the_search_unknown(kbcli, tmp_path):
    kb = write(tmp_path, "lift.pl", ":- table a/1.\na(f(f(f(f(a))))).\n"
               "rf(L) :- set_prolog_flag(max_table_answer_size, 1), set_prolog_flag(max_table_answer_size_action, fail), "
               "findall(X, a(X), L), set_prolog_flag(max_table_answer_size_action, error).\n"
               "stop :- set_prolog_flag(max_table_answer_size_action, suspend).\n")
    assert swipl_says(kb, "findall(X, a(X), L), L \\== []") == "true"
    assert statuses(kbcli, kb, "rf(L)", "\\+ rf(_)", "stop", "findall(X, a(X), [_])") == \
        ["unknown", "unknown", "unknown", "proved"]


def test_a_global_variable_a_library_declares_safe_is_set_back_after_each_goal(kbcli, tmp_path):
    kb = write(tmp_path, "glob.pl", ":- use_module(library(clpb)).\nsetg(X) :- nb_setval('$clpb_atoms', X).\n"
                                    "getg(X) :- nb_current('$clpb_atoms', X).\n")
    done = kbcli("kb", "prove", str(kb), "getg(X)", "setg(hello)", "getg(X)", "--format", "json")
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["status"] for r in replies] == ["proved"] * 3
    assert replies[0]["solutions"][0]["bindings"] == replies[2]["solutions"][0]["bindings"] != {"X": "hello"}
