"""Three holes in the KB sandbox (logicpipe/kb/guard.pl), each driven through the real `kb prove`:

1. library(sandbox)'s analysis of a goal bound the goal's own variables (an unbound module became kb),
   so a goal plain swipl answers with an instantiation error was proved, or failed the whole command.
2. A KB's own call_with_depth_limit/3 whose result argument was already bound hid that the limit cut
   the search short (the goal was failed, its negation proved).
3. A KB rule naming the engine's own wrapper predicates (user:lp_dcg_body/5, lp_recover/3, ...), which
   call their goal unchecked, ran anything.

Plain swipl on the same KB is the oracle where it has an answer (an error there is `unknown` here)."""

import json
import subprocess

from logicpipe.solvers.lp import swipl_path

LIMITS = ("--time", "2", "--inferences", "200000")


def prove(kbcli, kb, *goals):
    done = kbcli("kb", "prove", str(kb), *goals, "--format", "json", *LIMITS, timeout=120)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    results = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(results) == len(goals)
    return results


ORACLE = r"""
:- initialization(main, main).
main :-
    current_prolog_flag(argv, Argv), append(_, [KB|Goals], Argv), !,
    load_files(KB, []),
    forall(member(Text, Goals),
           ( term_string(G, Text),
             catch(( call_with_inference_limit(G, 200000, R) -> ( R == inference_limit_exceeded -> O = limit ; O = true ) ; O = false ),
                   _, O = error),
             writeln(O) )).
"""


def swipl(tmp_path, kb, *goals):
    """Plain swipl's outcome per goal: true, false, error or limit."""
    oracle = tmp_path / "oracle.pl"
    oracle.write_text(ORACLE)
    done = subprocess.run([swipl_path(), "-q", str(oracle), "--", str(kb), *goals], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


VERDICT = {"true": "proved", "false": "failed", "error": "unknown", "limit": "unknown"}

BASE = """\
fact(0).
holds(G) :- G.
parse(G, L) :- phrase(G, L).
greeting --> [hello].
"""


def test_the_sandbox_check_binds_none_of_the_goals_variables(kbcli, tmp_path):
    kb = tmp_path / "base.pl"
    kb.write_text(BASE)
    goals = ["holds(M:fact(0))", "fact(0)", "M:fact(0)", "\\+ parse(M:greeting, [hello])", "holds(X)",
             "M = kb, M:fact(0)", "holds(kb:fact(0))", "parse(greeting, [hello])", "\\+ holds(M:fact(0))"]
    plain = swipl(tmp_path, kb, *goals)
    assert plain == ["error", "true", "error", "error", "error", "true", "true", "true", "error"]
    results = prove(kbcli, kb, *goals)
    for goal, mine, theirs in zip(goals, results, plain, strict=True):
        assert mine["status"] == VERDICT[theirs], (goal, mine)
    # an unbound module is never answered with one the sandbox made up
    assert all(s["bindings"] != {"M": "kb"} for r in results[:5] for s in r["solutions"])
    assert "instantiated" in results[0]["reason"]


DEPTH = """\
chain(0) :- !.
chain(N) :- N1 is N - 1, chain(N1).
within(G, D) :- call_with_depth_limit(G, 20, D).
costly(G, R) :- call_with_inference_limit(G, 500, R).
"""


def test_a_kb_depth_limit_that_cut_the_search_is_unknown_whatever_its_result_argument(kbcli, tmp_path):
    kb = tmp_path / "depth.pl"
    kb.write_text(DEPTH)
    cut = ["within(chain(100), 5)", "\\+ within(chain(100), 5)", "\\+ within(chain(100), D)",
           "within(chain(100), depth_limit_exceeded)", "costly(chain(1000), !)", "\\+ costly(chain(1000), !)",
           "costly(chain(1000), inference_limit_exceeded)"]
    results = prove(kbcli, kb, *cut)
    assert [r["status"] for r in results] == ["unknown"] * len(cut), results
    assert results[0]["limit"] == "depth" and results[4]["limit"] == "inferences"
    # A search the limit did not cut answers as plain swipl does, the result argument bound or not.
    # (The depth itself differs: the engine's checked call of the KB's G counts frames of its own.)
    whole = ["within(chain(3), D)", "within(chain(3), depth_limit_exceeded)",
             "\\+ within(chain(3), depth_limit_exceeded)", "costly(chain(3), R)", "costly(chain(3), !)",
             "costly(chain(3), true)"]
    plain = swipl(tmp_path, kb, *whole)
    assert plain == ["true", "false", "true", "true", "true", "false"]
    for goal, mine, theirs in zip(whole, prove(kbcli, kb, *whole), plain, strict=True):
        assert mine["status"] == VERDICT[theirs], (goal, mine)


# Rules a hostile KB author writes to reach the engine's wrappers, which call their goal unchecked.
WRAP = """\
:- dynamic stored/1.
r1(X) :- user:lp_dcg_body(S, S, X, [], _).
r2(X) :- lp_dcg_body(S, S, X, [], _).
r3(X) :- kb:lp_dcg_body(S, S, X, [], _).
r4(X) :- elsewhere:lp_dcg_body(S, S, X, [], _).
r5(X) :- user:lp_recover(e, e, X).
r6(X) :- lp_recover(e, e, X).
r7(X) :- user:lp_lambda(v, [], X, _).
r8(X) :- user:lambda_call(v, [], X, []).
r9(X) :- call(user:lp_dcg_body(S, S), X, [], _).
r10(X) :- call(user:lp_recover, e, e, X).
r11(X) :- maplist(user:lp_recover(e, e), [X]).
r12(X) :- apply(user:lp_recover, [e, e, X]).
r13(X) :- G =.. [lp_dcg_body, S, S, X, [], _], call(G).
r14(X) :- G = lp_dcg_body(S, S, X, [], _), user:G.
r15(X) :- M = user, M:lp_recover(e, e, X).
r16(X) :- C = user:lp_recover, call(C, e, e, X).
r17(X) :- findall(x, user:lp_dcg_body(S, S, X, [], _), _).
r18(X) :- user:literal_assert(assertz, (stored(1) :- X), []), stored(1).
r19(X) :- user:lp_colon(X).
r20(X) :- assertz((stored(2) :- user:lp_dcg_body(S, S, X, [], _))), stored(2).
r21(X) :- phrase(user:lp_dcg_body(S, S, X), [], _).
r22(X) :- catch(throw(e), _, user:lp_recover(e, e, X)).
r23(X) :- format(atom(_), "~@", [user:lp_recover(e, e, X)]).
r24(X) :- call([Y]>>(user:lp_recover(e, e, Y)), X).
r25(X) :- user:lp_closure(X, a).
r26(X) :- user:lp_apply(X, []).
r27(X) :- user:checked(X).
r28(X) :- user:lp_format(format("~@", [X])).
r29(X) :- user:(lp_recover(e, e, X), true).
r30(X) :- call(lp_recover(e), e, X).
r31(X) :- user:closure_call(X, []).
r32(X) :- user:bounded(_{time: 2, inferences: 100000}, X, _).
r33(X) :- \\+ \\+ user:lp_recover(e, e, X).
r34(X) :- user:safe_assert(assertz, (stored(3) :- X), []), stored(3).
g(X) --> user:lp_dcg_body(S, S, X).
r35(X) :- phrase(g(X), [], _).
"""

RULES = 35

# A KB whose own predicates share names with the engine's: they are the KB's, and answer as in swipl.
OWN = """\
e(a, b).
e(b, c).
e(c, a).
found(X, Y) :- found(X, Z), e(Z, Y).
found(X, Y) :- e(X, Y).
allowed(a, 1).
allowed(b, 2).
text(X, Y) :- allowed(X, Y).
all_allowed(L) :- findall(X-Y, allowed(X, Y), L).
mapped(L) :- maplist(allowed, [a, b], L).
checked(X) :- X > 0.
positive(X) :- checked(X).
lp_recover(_, _, ok).
recovered(X) :- lp_recover(e, e, X).
recovered_in_user(X) :- user:(lp_recover(e, e, X), true).
"""


def test_a_kb_rule_naming_the_engines_wrappers_runs_nothing(kbcli, tmp_path):
    kb = tmp_path / "wrap.pl"
    kb.write_text(WRAP)
    marker = tmp_path / "pwned"
    # One predicate per rule: library(sandbox) walks every clause of a predicate a goal calls.
    goals = [f"r{i}(shell('touch {marker}{i}'))" for i in range(1, RULES + 1)]
    goals += ["r13(true)", "r6(true)"]
    for goal, result in zip(goals, prove(kbcli, kb, *goals), strict=True):
        assert result["status"] == "unknown" and result["reason"].startswith("refused by "), (goal, result)
    assert not list(tmp_path.glob("pwned*"))


def test_kb_predicates_named_like_the_engines_are_the_kbs_own(kbcli, tmp_path):
    kb = tmp_path / "own.pl"
    kb.write_text(OWN)
    goals = ["found(a, c)", "text(a, Y)", "all_allowed([a-1, b-2])", "mapped([1, 2])", "positive(3)",
             "positive(-1)", "recovered(ok)", "recovered_in_user(ok)"]
    # found/2 is left-recursive: plain swipl loops on it; the engine tables it (kb check names it).
    plain_kb = tmp_path / "plain.pl"
    plain_kb.write_text(":- table found/2.\n" + OWN)
    plain = swipl(tmp_path, plain_kb, *goals)
    assert plain == ["true", "true", "true", "true", "true", "false", "true", "true"]
    for goal, mine, theirs in zip(goals, prove(kbcli, kb, *goals), plain, strict=True):
        assert mine["status"] == VERDICT[theirs], (goal, mine)


TNOT = """\
:- table q/1.
q(a).
nt(G) :- tnot(G).
"""


def test_tabled_negation_of_a_goal_a_rule_was_given_runs_as_in_swipl_and_is_checked(kbcli, tmp_path):
    # tnot/1 needs the tabled goal itself: the checking wrapper around a variable goal was "not tabled".
    kb = tmp_path / "tnot.pl"
    kb.write_text(TNOT)
    marker = tmp_path / "pwned"
    goals = ["nt(q(b))", "nt(q(a))"]
    assert swipl(tmp_path, kb, *goals) == ["true", "false"]
    results = prove(kbcli, kb, *goals, f"nt(shell('touch {marker}'))")
    assert [r["status"] for r in results] == ["proved", "failed", "unknown"]
    assert "refused" in results[2]["reason"] and not marker.exists()
    assert results[0]["solutions"][0]["tree"]["children"][0]["goal"] == "tnot(q(b))"


def test_a_rule_may_not_load_a_file_defer_a_goal_abolish_tables_or_translate_a_message(kbcli, tmp_path):
    # library(sandbox) allows each of these; each reaches past the sandbox or past the goal: a module
    # loaded at run time is not rewritten (its shell/1 ran), an undo/1 goal runs after the goal's
    # isolation ended, abolished tables hide undefined answers, and a message handed in runs ~@.
    marker = tmp_path / "pwned"
    (tmp_path / "mymod.pl").write_text(f":- module(mymod, [foo/0]).\nfoo :- shell('touch {marker}').\n")
    kb = tmp_path / "bounds.pl"
    kb.write_text(f"""\
:- dynamic seen/1.
g :- use_module('{tmp_path / "mymod"}'), foo.
g2 :- ensure_loaded('{tmp_path / "mymod"}').
mark :- undo(assertz(seen(1))).
:- table r/0.
r :- tnot(r).
hide :- findall(x, r, [x]), abolish_all_tables.
sub :- findall(x, r, [x]), abolish_table_subgoals(r).
describe(E, S) :- message_to_string(E, S).
fact(0).
""")
    goals = ["g", "g2", "seen(1)", "mark", "seen(1)", "hide", "sub",
             f"describe(format(\"~@\", [shell('touch {marker}')]), S)", "fact(0)"]
    results = prove(kbcli, kb, *goals)
    assert [r["status"] for r in results] == ["unknown", "unknown", "failed", "unknown", "failed", "unknown",
                                              "unknown", "unknown", "proved"], results
    assert not marker.exists()


def test_a_kb_clause_defining_a_hook_swi_prolog_calls_is_refused_at_load(kbcli, tmp_path):
    marker = tmp_path / "pwned"
    hooks = {
        "message": ":- multifile prolog:message//1.\n"
                   f"prolog:message(error(type_error(_, _), _)) --> {{ shell('touch {marker}') }}, [].\n",
        "portray": f":- multifile user:portray/1.\nuser:portray(secret) :- shell('touch {marker}').\n",
        "exception": f":- multifile user:exception/3.\nuser:exception(undefined_predicate, _, fail) :- "
                     f"shell('touch {marker}').\n",
        "expansion": "goal_expansion(run_it(G), call(G)).\nr(G) :- run_it(G).\n",
    }
    for name, text in hooks.items():
        kb = tmp_path / f"{name}.pl"
        kb.write_text(text + "fact(0).\nshow(X, A) :- format(atom(A), \"~p\", [X]).\n")
        proved = kbcli("kb", "prove", str(kb), "X is foo + 1", "show(secret, A)", "fact(0)")
        assert proved.returncode == 2 and "is refused: SWI-Prolog would call it outside the sandbox" in proved.stderr
        checked = kbcli("kb", "check", str(kb))
        assert checked.returncode == 1 and "is refused" in checked.stdout + checked.stderr, name
    assert not marker.exists()


def test_a_rule_may_not_reach_a_goal_through_an_attribute_or_a_builtin_a_library_widened(kbcli, tmp_path):
    # put_attr(V, freeze, G) calls G when V is bound, and neither layer saw G; library(pengines_io)
    # declares write_term/2 safe for library(sandbox), and its portray_goal option calls a goal.
    marker = tmp_path / "pwned"
    kb = tmp_path / "attr.pl"
    kb.write_text(":- use_module(library(pengines_io)).\nr(G) :- put_attr(V, freeze, G), V = 1.\n"
                  "w(X, G) :- write_term(X, [portray_goal(G)]).\nfact(0).\n")
    results = prove(kbcli, kb, f"r(shell('touch {marker}'))", f"w(foo, [_, _]>>shell('touch {marker}'))",
                    "fact(0)")
    assert [r["status"] for r in results] == ["unknown", "unknown", "proved"], results
    assert all("refused" in r["reason"] for r in results[:2]) and not marker.exists()


def test_a_clause_compiled_into_user_after_a_directive_is_refused_as_a_hook(kbcli, tmp_path):
    marker = tmp_path / "pwned"
    kb = tmp_path / "ssm.pl"
    kb.write_text(":- '$set_source_module'(_, user).\n"
                  f"portray(X) :- X == boom, shell('touch {marker}').\n"
                  ":- '$set_source_module'(_, kb).\nshow(X) :- format(\"~p~n\", [X]).\n")
    done = kbcli("kb", "prove", str(kb), "show(boom)")
    assert done.returncode == 2 and "user:portray/1 is refused" in done.stderr and not marker.exists()


def test_a_rule_may_not_swap_a_goal_into_a_freeze_attribute(kbcli, tmp_path):
    # get_attr/3 hands back the attribute itself; setarg/3 then made the frozen goal the goal's term,
    # which binding the variable ran unchecked (library(sandbox) deems every step safe).
    marker = tmp_path / "pwned"
    kb = tmp_path / "swap.pl"
    kb.write_text("run(G) :- freeze(X, true), get_attr(X, freeze, V), setarg(2, V, G), X = 1.\n"
                  "late(G, X) :- freeze(X, G).\nfact(0).\n")
    results = prove(kbcli, kb, f"run(shell('touch {marker}'))", "late(fact(0), 1)", f"late(shell('touch {marker}'), 1)")
    assert [r["status"] for r in results] == ["unknown", "proved", "unknown"], results
    assert not marker.exists()
