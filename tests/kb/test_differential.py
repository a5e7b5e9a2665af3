"""Differential test: generated KBs and goals, answered by `kb prove` (CLI, --format json) and by plain
`swipl` consulting the same file; the solution sets (order aside) must be equal wherever SWI-Prolog's own
search ends. Where it does not (left recursion), the same KB with `:- table` on the predicates the engine
says it tabled is the oracle. A sample runs in make test; thousands of goals under -m slow."""

import json
import random
import subprocess
from pathlib import Path

import pytest

from logicpipe.kb.knowledge import KnowledgeBase
from logicpipe.solvers.lp import swipl_path

ORACLE = r"""
:- use_module(library(http/json)).
:- initialization(main, main).
main :-
    current_prolog_flag(argv, Argv), append(_, [KB, Goals], Argv),
    load_files(KB, []),
    read_file_to_string(Goals, Text, []),
    split_string(Text, "\n", "", Lines),
    forall(( member(Line, Lines), Line \== "" ), answer(Line)).
answer(Line) :-
    term_string(G, Line, [variable_names(Ns)]),
    catch(call_with_inference_limit(findall(B, (call(G), bindings(Ns, B)), L), 200000, R), E, true),
    (   nonvar(E) -> Out = _{status: "error"}
    ;   R == inference_limit_exceeded -> Out = _{status: "limit"}
    ;   Out = _{status: "ended", solutions: L}
    ),
    json_write_dict(current_output, Out, [width(0)]), nl.
bindings(Ns, Dict) :-
    copy_term(Ns, Ns2),
    maplist([N=V]>>( var(V) -> V = '$VAR'(N) ; true ), Ns2),
    term_variables(Ns2, Fresh),
    foldl([Var, I, I1]>>( I1 is I + 1, C is 0'A + I, format(atom(Nm), "_~c", [C]), Var = '$VAR'(Nm) ), Fresh, 0, _),
    findall(N-S, ( member(N=V, Ns2), \+ sub_atom(N, 0, _, _, '_'),
                   format(string(S), "~W", [V, [quoted(true), numbervars(true), spacing(next_argument)]]) ),
            Pairs),
    dict_pairs(Dict, _, Pairs).
"""


def generate(rng: random.Random) -> tuple[str, list[str], list[str]]:
    """A KB (facts, left and right recursion, cut, negation, arithmetic, if-then-else, aggregates,
    exceptions, tabling), goals over it, and the predicates the engine must table by itself (r/2 is
    left-recursive; rr/2 recurses over r/2's tabled answers)."""
    consts = list("abcde"[: rng.randint(3, 5)])
    lines = [f"e({rng.choice(consts)}, {rng.choice(consts)})." for _ in range(rng.randint(2, 7))]
    order = rng.sample(consts, len(consts))
    lines += [f"o({x}, {y})." for x, y in zip(order, order[1:])]
    lines += [f"v({c}, {rng.randint(0, 5)})." for c in consts]
    t1, t2, k, c, m = rng.randint(3, 5), rng.randint(1, 2), rng.randint(1, 3), rng.randint(-2, 2), rng.randint(1, 4)
    rules = {
        "r/2": ["r(X, Y) :- e(X, Y).", "r(X, Y) :- r(X, Z), e(Z, Y)."],
        "anc/2": ["anc(X, Y) :- o(X, Y).", "anc(X, Y) :- o(X, Z), anc(Z, Y)."],
        "cls/2": [f"cls(X, big) :- v(X, V), V >= {t1}, !.", f"cls(X, mid) :- v(X, V), V >= {t2}, !.",
                  "cls(_, none)."],
        "lonely/1": ["lonely(X) :- v(X, _), \\+ e(X, _)."],
        "dbl/2": [f"dbl(X, D) :- v(X, V), D is V * {k} + ({c})."],
        "tr/2": [":- table tr/2.", "tr(X, Y) :- e(Y, X).", "tr(X, Y) :- tr(X, Z), tr(Z, Y)."],
        "sign/2": [f"sign(X, S) :- v(X, V), ( V > {m} -> S = pos ; V =:= {m} -> S = zero ; S = neg )."],
        "deg/2": ["deg(X, N) :- v(X, _), aggregate_all(count, e(X, _), N)."],
        "allbig/1": [f"allbig(X) :- v(X, _), forall(e(X, Y), (v(Y, W), W > {t2}))."],
        "sdiv/2": ["sdiv(X, R) :- v(X, V), catch(R is 10 // V, error(evaluation_error(_), _), R = inf)."],
        "first/1": ["first(X) :- once(e(X, _))."],
        "mx/3": ["mx(X, Y, Z) :- v(X, A), v(Y, B), ( A >= B -> Z = X ; Z = Y )."],
        "nr/2": ["nr(X, Y) :- anc(X, Y), \\+ e(X, Y)."],
    }
    rules["rr/2"] = ["rr(X, Y) :- r(X, Y).", "rr(X, Z) :- r(X, Y), rr(Y, Z)."]  # recursion over tabled r/2
    chosen = [name for name in rules if rng.random() < 0.7]
    if "nr/2" in chosen and "anc/2" not in chosen:
        chosen.append("anc/2")
    if "rr/2" in chosen and "r/2" not in chosen:
        chosen.remove("rr/2")
    for name in chosen:
        lines += rules[name]

    def arg(var: str) -> str:
        return var if rng.random() < 0.6 else rng.choice(consts)

    goals = []
    for name in ["e/2", "v/2", *chosen]:
        functor, arity = name.split("/")
        for _ in range(rng.randint(1, 3)):
            goals.append(f"{functor}({', '.join(arg('XYZ'[i]) for i in range(int(arity)))})")
    extras = ["aggregate_all(count, e(_, _), N)", "aggregate_all(max(V), v(_, V), M)",
              "\\+ e(X, X)", "v(X, A), v(Y, B), A < B", "findall(X, v(X, _), L), length(L, N)",
              "(e(X, Y) ; e(Y, X))", "v(X, V), ( V > 2 -> R = hi ; R = lo )", "catch(X is 1 // 0, _, X = caught)"]
    if "r/2" in chosen:
        extras += ["r(X, Y), \\+ e(X, Y)", "aggregate_all(count, r(_, _), N)", "\\+ r(a, a)", "r(X, X)"]
    if "rr/2" in chosen:
        extras += ["rr(a, X)", "aggregate_all(count, rr(_, _), N)"]
    if "anc/2" in chosen:
        extras += ["anc(X, Y), v(X, A), v(Y, B), A > B", "forall(anc(X, Y), o(X, _))"]
    goals += rng.sample(extras, 3)
    tabled = [name for name in ("r/2", "rr/2") if name in chosen]
    return "\n".join(lines) + "\n", goals, tabled


def oracle(tmp: Path, kb_text: str, goals: list[str], name: str) -> list[dict]:
    kb, goal_file, program = tmp / f"{name}.pl", tmp / f"{name}.goals", tmp / "oracle.pl"
    kb.write_text(kb_text)
    goal_file.write_text("\n".join(goals) + "\n")
    program.write_text(ORACLE)
    done = subprocess.run([swipl_path(), "-q", str(program), "--", str(kb), str(goal_file)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def _solutions(bindings: list[dict]) -> list[str]:
    return sorted(json.dumps(b, sort_keys=True) for b in bindings)


def compare(kbcli, tmp: Path, seed: int) -> int:
    """Check one generated KB; return how many goals were compared."""
    kb_text, goals, left_recursive = generate(random.Random(seed))
    plain = oracle(tmp, kb_text, goals, f"kb{seed}")
    unended = [g for g, answer in zip(goals, plain) if answer["status"] != "ended"]
    tabled_text = "".join(f":- table {p}.\n" for p in left_recursive) + kb_text
    tabled = dict(zip(unended, oracle(tmp, tabled_text, unended, f"tabled{seed}") if unended else []))
    kb = tmp / f"kb{seed}.pl"
    done = kbcli("kb", "prove", str(kb), *goals, "--format", "json", "--max-solutions", "100000",
                 "--inferences", "200000")
    assert done.returncode in (0, 1), done.stderr
    ours = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(ours) == len(goals)
    with KnowledgeBase(kb) as base:
        assert base.auto_tabled == left_recursive, kb_text
    for goal, mine, swi in zip(goals, ours, plain):
        expected = swi if swi["status"] == "ended" else tabled[goal]
        where = f"seed {seed}, goal {goal}\n{kb_text}"
        assert expected["status"] == "ended", where
        assert mine["status"] in ("proved", "failed"), (mine, where)
        assert mine["truncated"] is False, where
        assert _solutions([s["bindings"] for s in mine["solutions"]]) == _solutions(expected["solutions"]), where
        assert mine["proved"] == bool(expected["solutions"]), where
    return len(goals)


def test_engine_agrees_with_plain_swipl_on_generated_kbs(kbcli, tmp_path):
    assert sum(compare(kbcli, tmp_path, seed) for seed in range(4)) >= 25


@pytest.mark.slow
@pytest.mark.parametrize("chunk", range(30))
def test_engine_agrees_with_plain_swipl_on_thousands_of_goals(kbcli, tmp_path, chunk):
    """300 KBs, over 3,000 goals in all, in chunks that each fit the per-test timeout."""
    start = 100 + 10 * chunk
    assert sum(compare(kbcli, tmp_path, seed) for seed in range(start, start + 10)) >= 100
