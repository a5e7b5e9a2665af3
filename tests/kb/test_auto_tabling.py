"""Only true left recursion is tabled: a predicate that recurses first on a proper part of its own
argument (a list's tail) ends in plain Prolog, and tabling it changed its answers (duplicates merged,
another order, memory on long lists), as the third red team found. Plain swipl is the oracle."""

from __future__ import annotations

import json

from tests.kb.oracle import swipl_says

KB = """cnt([], a).
cnt([], a).
cnt([_|T], R) :- cnt(T, R).
nums([], 0).
nums([_|T], N) :- nums(T, M), (N is M+10 ; N = M).
len([], 0).
len([_|T], N) :- len(T, M), N is M+1.
big(N) :- numlist(1, 20000, L), len(L, N).
edge(a, b).
edge(b, c).
path(X, Y) :- path(X, Z), edge(Z, Y).
path(X, Y) :- edge(X, Y).
"""
GOALS = ["aggregate_all(count, cnt([1], R), 2)", "findall(N, nums([a, b], N), L), L = [20|_]",
         "big(20000)", "path(a, c)", "\\+ path(c, a)"]


def test_shrinking_recursion_answers_as_plain_swipl_and_left_recursion_is_still_tabled(tmp_path, kbcli):
    kb = tmp_path / "kb.pl"
    kb.write_text(KB)
    done = kbcli("kb", "prove", str(kb), *GOALS, "--format", "json")
    verdicts = [json.loads(line)["status"] for line in done.stdout.splitlines()]
    # path/2 loops in plain swipl (so the oracle gives no verdict for it): the engine tables it.
    assert verdicts == ["proved", "proved", "proved", "proved", "proved"], done
    assert [swipl_says(kb, goal) for goal in GOALS[:3]] == ["true", "true", "true"]
    checked = kbcli("kb", "check", str(kb))
    notes = [line for line in checked.stderr.splitlines() if "left-recursive" in line]
    assert len(notes) == 1 and "path/2 is left-recursive" in notes[0], checked.stderr
