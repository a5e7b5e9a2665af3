"""Red team, fifth round: a closure handed to a meta-predicate of a library the KB imported (library
(dcg/high_order)'s sequence//2, optional//2, ..., also called module-qualified), which the whitelist
did not check, and through which a lambda reached term_string/3 with a goal in its options (also as
the body of a lambda called directly, which library(yall) declares `:`, not a goal); flag/3
counters (gensym/2) that leaked from one goal to the next; a limit that fired in a cleanup handler after
--max-solutions cut the search; and an answer with thousands of query variables. Each hostile goal must
be `unknown`; every other goal of the same batch answers as plain swipl answers it on a fresh process."""

import json

import pytest

from tests.kb.oracle import STATUS, swipl_says

RULES = """\
:- use_module(library(dcg/high_order)).
:- use_module(library(yall)).
setting(K, V) :- nb_getval(K, V).
items(E, L) --> sequence(E, L).
parse_items(E, L, S) :- phrase(items(E, L), S).
seq2(E, L, S) :- phrase(sequence(E, L), S).
seq3(E, Sep, L, S) :- phrase(sequence(E, Sep, L), S).
seq4(E, L, S) :- sequence(E, L, S, []).
opt(M, D, S) :- phrase(optional(M, D), S).
q1(E, L, S) :- dcg_high_order:sequence(E, L, S, []).
q2(E, L, S) :- call(dcg_high_order:sequence(E), L, S, []).
dig(D) --> [D], { member(D, [1, 2, 3]) }.
comma --> [','].
shown(Opts, T) --> { term_string(T, _, Opts) }.
lam(P, B, X) :- '>>'(P, B, X).
lit(X) :- '>>'([Y], atom(Y), X).
gs(X) :- gensym(a, X).
cl(G, C) :- setup_call_cleanup(true, G, C).
nums(X) :- between(1, inf, X).
loop2(X) :- X1 is X + 1, loop2(X1).
"""

LAMBDA = "[T, O, _]>>term_string(T, _, O)"

HOSTILE = [
    # the red team's: nb_setarg run as a sequence//2 closure, then a lambda reaching term_string/3 whose
    # portray_goal option calls any goal (nb_setval here; it forged the engine's replies)
    "parse_items(nb_setarg, [1], [a])",
    f"parse_items({LAMBDA}, [x], [portray_goal(nb_setval)])",
    # the other arities and optional//2, and the library's predicate called module-qualified
    "seq2(nb_setarg, [1], [a])",
    "seq3(nb_setarg, \",\", [1], [a])",
    "seq4(nb_setarg, [1], [a])",
    "opt(nb_setarg(1), nb_setarg(1), [a])",
    "q1(nb_setarg, [1], [a])",
    "q2(nb_setarg, [1], [a])",
    # write options reaching term_string/3 through the KB's own closure: the goal in them is checked
    "seq2(shown([portray_goal(nb_setval)]), [k], [])",
    # library(yall) declares a lambda's body `:` (a module-sensitive argument), not a goal
    "lam([X], term_string(y, _, [portray_goal(nb_setval)]), b)",
    "lam([X], nb_setarg(1, f(a), X), b)",
    # a limit firing in the cleanup handler that --max-solutions' cut ran
    "cl(nums(X), loop2(0))",
]

# Answered as plain swipl answers each on a fresh process (after the hostile goals of the same batch).
LEGIT = [
    "setting(x, V)",                       # the lambda's nb_setval(x, ...) must not have run
    "setting(k, V)",                       # nor shown//2's
    "setting(y, V)",                       # nor the lambda body's
    "lit(a)", "lit(1)",
    "seq2(shown([quoted(true)]), [f('A')], [])",
    "parse_items(dig, L, [1, 2, 3])",
    "seq3(dig, comma, L, [1, ',', 2])",
    "seq4(dig, [1, 2], [1, 2])",
    "q1(dig, L, [3, 1])",
    "opt(dig, [], [2])",
    "gs(X)", "gs(a1)", "gs(a1)",           # gensym's counter (a flag/3 key) starts afresh for each goal
    "cl(nums(X), true)",
    "X = [" + ", ".join(f"V{i}" for i in range(8000)) + "]",
]


@pytest.fixture
def kb(tmp_path):
    path = tmp_path / "rules.pl"
    path.write_text(RULES)
    return path


def prove(kbcli, kb, goals):
    done = kbcli("kb", "prove", str(kb), *goals, "--format", "json", "--inferences", "200000", "--time", "2")
    assert done.returncode in (0, 1), done.stdout + done.stderr
    results = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(results) == len(goals)
    return results


def test_closures_of_library_meta_predicates_are_checked_and_later_goals_answer_as_swipl(kbcli, kb):
    results = prove(kbcli, kb, HOSTILE + LEGIT)
    for goal, result in zip(HOSTILE, results, strict=False):
        assert result["status"] == "unknown", (goal, result)
    for goal, result in zip(LEGIT, results[len(HOSTILE):], strict=True):
        assert result["status"] == STATUS[swipl_says(kb, goal)], (goal[:80], result.get("reason"))


def test_a_library_closure_from_the_kb_itself_runs(kbcli, kb):
    """The check refuses only what a goal may not call: a KB predicate as the closure parses."""
    [parsed] = prove(kbcli, kb, ["parse_items(dig, L, [1, 2, 3])"])
    assert parsed["solutions"][0]["bindings"] == {"L": "[1, 2, 3]"}


def test_a_limit_in_a_cleanup_after_max_solutions_is_unknown_but_a_quiet_cleanup_is_not(kbcli, kb):
    cut, quiet = prove(kbcli, kb, ["cl(nums(X), loop2(0))", "cl(nums(X), true)"])
    assert (cut["status"], cut["solutions"], cut["limit"]) == ("unknown", [], "inferences")
    assert (quiet["status"], len(quiet["solutions"]), quiet["truncated"]) == ("proved", 10, True)


def test_an_answer_with_thousands_of_variables_is_shown(kbcli, kb):
    [many] = prove(kbcli, kb, [LEGIT[-1]])
    assert many["status"] == "proved"
    assert many["solutions"][0]["bindings"]["X"].startswith("[V0, V1, V2")


def test_a_library_meta_predicate_the_kb_does_not_import_is_checked_when_called_qualified(kbcli, tmp_path):
    """Loaded but not imported: kb does not see sequence//2's declaration, so its module's is read; its
    closure runs in that module, as in SWI-Prolog (where the KB's own dig//1 is then unknown there)."""
    kb = tmp_path / "qualified.pl"
    kb.write_text(":- use_module(library(dcg/high_order), []).\n"
                  + "".join(line + "\n" for line in RULES.splitlines() if line.startswith(("q1(", "q2(", "dig(")))
                  + "fact(0).\n")
    goals = ["q1(nb_setarg, [1], [a])", "q2(nb_setarg, [1], [a])", "q1(dig, L, [3, 1])", "fact(0)"]
    results = prove(kbcli, kb, goals)
    assert [r["status"] for r in results[:2]] == ["unknown", "unknown"]
    for goal, result in zip(goals[2:], results[2:], strict=True):
        assert result["status"] == STATUS[swipl_says(kb, goal)], goal


# Pure builtins library(sandbox) accepts, once refused at goal level: each answers as plain swipl does.
PURE_NOW = [
    'string_code(1, "abc", C)', "char_type(a, alpha)", "char_type(1, alpha)",
    "unify_with_occurs_check(X, f(Y))", "unify_with_occurs_check(X, f(X))", "X = f(X), cyclic_term(X)",
    "T = f(X, Y), numbervars(T, 0, E), E == 2", 'term_string(T, "foo(X)"), T = foo(_)',
    "pairs_keys_values(P, [a, b], [1, 2]), P == [a-1, b-2]", "list_to_assoc([a-1], A), A = t(a, 1, _, t, t)",
    "aggregate(count, X^member(X, [a, b]), N), N == 2", "limit(2, member(X, [a, b, c])), X == c",
    "distinct(X, member(X, [a, a, b]))", "call_nth(member(X, [a, b]), 2), X == b",
]
# Their goal arguments are checked like any goal's.
PURE_HOSTILE = [
    "aggregate(count, nb_setarg(1, f(a), b), N)", "aggregate(count, X^nb_setarg(1, f(a), X), N)",
    "limit(1, nb_setarg(1, f(a), b))", "distinct(X, nb_setarg(1, f(a), b))", "call_nth(nb_setarg(1, f(a), b), N)",
    'term_string(T, "nb_setval(k, v)"), T',
]


def test_pure_builtins_answer_as_swipl_and_their_goals_are_checked(kbcli, kb):
    results = prove(kbcli, kb, PURE_NOW + PURE_HOSTILE)
    for goal, result in zip(PURE_NOW, results, strict=False):
        assert result["status"] == STATUS[swipl_says(kb, goal)], (goal, result.get("reason"))
    for goal, result in zip(PURE_HOSTILE, results[len(PURE_NOW):], strict=True):
        assert result["status"] == "unknown" and "refused" in result["reason"], (goal, result)
