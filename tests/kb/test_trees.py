"""Every node of a goal tree `kb prove` prints, held against plain swipl on the same KB: a node marked
proved is a goal swipl proves as written, a node marked failed is one it does not, for the solutions'
trees and for a failed search's explored tree alike. A node's text is the only thing a reader (or a
model given the context) sees, so a node that shows other arguments than the call had is caught here."""

import json
import subprocess

import pytest

from logicpipe.solvers.lp import swipl_path
from tests.conftest import ROOT

# Each rule shape whose tree once showed, or could show, other arguments than the call's: a third
# argument left free (once read as a rewritten catch/3), a conjunction and a module-qualified term as
# data, negation, if-then-else, findall and catch.
KB = """\
p(a, x, 1).
p(b, y, 2).
c(S, C) :- p(S, C, M), M >= 1.
pair(X) :- s((X, _)).
s((1, 2)).
qual(X) :- v(_:X).
v(m:1).
odd_one(X) :- member(X, [1, 2, 3]), \\+ p(_, _, X).
half(X, Y) :- catch(Y is X / 2, _, fail), Y > 1.
pick(X, Y) :- ( p(X, _, N) -> Y = N ; Y = none ).
marks(S, L) :- findall(M, p(S, _, M), L), L \\== [].
"""
GOALS = ["c(a, z)", "c(a, X)", "c(b, y)", "pair(3)", "pair(1)", "qual(2)", "qual(1)", "odd_one(X)",
         "half(1, Y)", "half(4, Y)", "pick(c, Y)", "pick(b, Y)", "marks(c, L)", "marks(a, L)", "\\+ c(a, z)",
         "\\+ c(b, y)"]
CAMPUS_GOALS = ["completed(bob, math201)", "eligible(bob, C)", "\\+ completed(bob, phil101)",
                "missing_prerequisite(bob, math201)"]


def nodes(tree):
    yield tree
    for child in tree["children"]:
        yield from nodes(child)


def tree_claims(kbcli, kb, goals):
    """(goal text, proved?) for every node of every tree the CLI prints for these goals."""
    done = kbcli("kb", "prove", str(kb), *goals, "--format", "json")
    said = []
    for line in done.stdout.splitlines():
        reply = json.loads(line)
        trees = [s["tree"] for s in reply["solutions"]] + ([reply["explored"]] if reply.get("explored") else [])
        said += [(node["goal"], node["proved"]) for tree in trees for node in nodes(tree)]
    return said


def plain_swipl(kb, goals, tmp_path):
    """For each goal text, whether plain swipl proves it on the KB (read as written, variables free)."""
    listed = tmp_path / "goals.txt"
    listed.write_text("\n".join(goals) + "\n")
    script = (f"consult('{kb}'), open('{listed}', read, S), "
              "repeat, read_line_to_string(S, L), ( L == end_of_file -> ! ; "
              "term_string(G, L), ( \\+ \\+ G -> writeln(yes) ; writeln(no) ), fail )")
    done = subprocess.run([swipl_path(), "-q", "-g", script, "-t", "halt"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    return [line == "yes" for line in done.stdout.split()]


@pytest.mark.parametrize("which", ["own", "campus"])
def test_every_tree_node_is_proved_or_failed_as_plain_swipl_says(kbcli, tmp_path, which):
    if which == "own":
        kb = tmp_path / "shapes.pl"
        kb.write_text(KB)
        goals = GOALS
    else:
        kb, goals = ROOT / "examples" / "kb" / "campus.pl", CAMPUS_GOALS
    said = tree_claims(kbcli, kb, goals)
    assert len(said) > 2 * len(goals) and any(not proved for _, proved in said)
    assert plain_swipl(kb, [goal for goal, _ in said], tmp_path) == [proved for _, proved in said], said


def test_a_failed_call_shows_the_arguments_it_was_called_with(kbcli, tmp_path):
    kb = tmp_path / "shapes.pl"
    kb.write_text(KB)
    said = dict(tree_claims(kbcli, kb, ["c(a, z)", "pair(3)"]))
    assert said["p(a, z, _A)"] is False and said["s((3, _A))"] is False, said


WRAPPED = """\
chain(0) :- !.
chain(N) :- N > 0, N1 is N - 1, chain(N1).
shallow(G) :- call_with_depth_limit(G, 20, _).
bounded(G) :- call_with_inference_limit(G, 10000, _).
twice(L, M) :- maplist([X, Y]>>(Y is X * 2), L, M).
safe(G) :- catch(G, _, fail).
holds(G) :- G.
"""


def test_no_node_shows_the_sandboxs_own_wrappers(kbcli, tmp_path):
    kb = tmp_path / "wrapped.pl"
    kb.write_text(WRAPPED)
    goals = ["shallow(chain(2))", "\\+ shallow(chain(2))", "bounded(chain(2))", "twice([1, 2], M)",
             "safe(chain(1))", "holds(chain(1))", "\\+ holds(chain(1))"]
    shown = [goal for goal, _ in tree_claims(kbcli, kb, goals)]
    assert len(shown) > len(goals)
    assert not [goal for goal in shown if "lp_" in goal or "checked(" in goal or "user:" in goal], shown
