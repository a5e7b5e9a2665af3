"""The issue-25 reproducers for the KB engine: answers as SWI-Prolog gives them, a sandbox that holds
through the KB's own meta-calls, three verdicts, no Python recursion limits, printing that round-trips."""

import json
import subprocess

import pytest

from logicpipe.kb.ask import AskRecord
from logicpipe.kb.knowledge import KnowledgeBase, parse_percept
from logicpipe.kb.terms import canonical, parse_goals, parse_term, show
from logicpipe.kb.validate import judge
from logicpipe.solvers.lp import swipl_path
from logicpipe.testing import FakeOpenAI

ISSUE = """\
edge(a,b). edge(b,c). edge(c,a). edge(c,d).
path(X,Y) :- edge(X,Y).
path(X,Y) :- path(X,Z), edge(Z,Y).
grade(S, high) :- S >= 90, !.
grade(S, mid) :- S >= 50, !.
grade(_, low).
holds(G) :- G.
apply_all(Cs, U) :- forall(member(C, Cs), call(C, U)).
nice(a).
:- table tpath/2.
tpath(X,Y) :- edge(X,Y).
tpath(X,Y) :- tpath(X,Z), edge(Z,Y).
broken :- missing_predicate.
spin(X) :- Y is X + 1, spin(Y).
:- op(700, xfx, ===>).
a ===> b.
place('münchen').
:- dynamic runs/1, stored/1.
:- assertz((runs(G) :- G)).
later(G) :- assertz((stored(X) :- call(X))), stored(G).
each(Gs) :- maplist([G]>>call(G), Gs).
applied(G, Args) :- apply(G, Args).
parsed(G, L) :- phrase(G, L).
greeting --> [hello].
"""


@pytest.fixture
def kb(tmp_path):
    path = tmp_path / "issue.pl"
    path.write_text(ISSUE)
    return path


def prove(cli, kb, *goals, extra=()):
    done = cli("kb", "prove", str(kb), *goals, "--format", "json", *extra)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def bindings(result):
    return sorted(json.dumps(s["bindings"], sort_keys=True) for s in result["solutions"])


def test_cut_gives_one_solution_as_swipl_does(kbcli, kb):
    [grade, low] = prove(kbcli, kb, "grade(95, G)", "grade(40, G)")
    assert [s["bindings"] for s in grade["solutions"]] == [{"G": "high"}]
    assert [s["bindings"] for s in low["solutions"]] == [{"G": "low"}]
    assert grade["solutions"][0]["tree"]["clause"].endswith("issue.pl:4")


def test_left_recursion_is_tabled_and_complete(kbcli, kb):
    reached, negated, count, tabled = prove(kbcli, kb, "path(a, d)", "\\+ path(a, d)",
                                            "aggregate_all(count, path(a, _), N)", "tpath(a, X)")
    assert reached["status"] == "proved"
    assert [c["goal"] for c in reached["solutions"][0]["tree"]["children"]] == ["path(a, c)", "edge(c, d)"]
    assert negated["status"] == "failed" and negated["proved"] is False
    assert count["solutions"][0]["bindings"] == {"N": "4"}
    assert bindings(tabled) == sorted(json.dumps({"X": x}) for x in "abcd")
    with KnowledgeBase(kb) as base:
        assert base.auto_tabled == ["path/2"]  # tpath/2 is tabled by the KB itself
        names = {p.signature: p for p in base.predicates}
        assert names["path/2"].tabled and names["tpath/2"].tabled and not names["edge/2"].tabled
        assert not any(n.startswith("$") or n.startswith("start_tabling") for n in names)


def test_a_recursive_caller_of_an_auto_tabled_predicate_is_tabled_too(kbcli, tmp_path):
    """linked/2 is left-recursive (tabled); reachable/2 recurses over its answers, which come in the
    table's order: tabled as well, it ends with complete answers instead of running into a cycle."""
    path = tmp_path / "walk.pl"
    path.write_text("walkway(library, gym). walkway(gym, pool). walkway(pool, stadium). walkway(lab, shed).\n"
                    "linked(A, B) :- walkway(A, B).\nlinked(A, B) :- linked(B, A).\n"
                    "reachable(A, B) :- linked(A, B).\nreachable(A, C) :- linked(A, B), reachable(B, C).\n")
    with KnowledgeBase(path) as base:
        assert base.auto_tabled == ["linked/2", "reachable/2"]
    there, nowhere, everything = prove(kbcli, path, "reachable(library, stadium)", "reachable(library, shed)",
                                       "aggregate_all(count, reachable(library, _), N)")
    assert there["status"] == "proved" and there["truncated"] is False
    assert nowhere["status"] == "failed"
    assert everything["solutions"][0]["bindings"] == {"N": "4"}  # gym, pool, stadium and library itself


HOSTILE = ["holds(shell('touch {m}'))", "apply_all([shell], 'touch {m}')", "X = shell('touch {m}'), holds(X)",
           "holds((member(G, [shell('touch {m}')]), G))", "holds(call(shell, 'touch {m}'))",
           "holds(findall(x, shell('touch {m}'), _))", "holds(maplist(shell, ['touch {m}']))",
           "holds(forall(member(C, [shell('touch {m}')]), call(C)))", "holds(system:shell('touch {m}'))",
           "holds(holds(\\+ \\+ shell('touch {m}')))", "apply_all([holds], shell('touch {m}'))",
           "holds(aggregate_all(count, shell('touch {m}'), _))", "holds(G =.. [shell, 'touch {m}'])",
           "runs(shell('touch {m}'))", "later(shell('touch {m}'))", "each([nice(a), shell('touch {m}')])",
           "applied(shell, ['touch {m}'])", "parsed(shell, ['touch {m}'])"]


def test_model_text_never_runs_through_the_kbs_meta_calls(kbcli, kb, tmp_path):
    marker = tmp_path / "M"
    results = prove(kbcli, kb, *(goal.format(m=marker) for goal in HOSTILE))  # one KB load for all
    assert not marker.exists()
    for goal, result in zip(HOSTILE, results, strict=True):
        if goal.startswith("holds(G =.."):  # only builds the term: fine, nothing runs
            assert result["status"] == "proved"
            continue
        assert result["status"] == "unknown" and result["proved"] is False, goal
        assert result["reason"].startswith("refused by "), goal
        assert "shell" in result["reason"] or "variable" in result["reason"], goal  # sandbox: G unknown


def test_legitimate_meta_calls_to_kb_predicates_keep_working(kbcli, kb):
    results = prove(kbcli, kb, "holds(edge(a, X))", "apply_all([nice], a)", "holds(maplist(edge(c), [a, d]))",
                    "holds(findall(Y, path(a, Y), L))", "X = nice(Y), holds(X)", "runs(nice(X))",
                    "later(nice(a))", "each([nice(a), edge(a, b)])", "applied(edge(a), [b])", "parsed(greeting, [hello])")
    assert [r["status"] for r in results] == ["proved"] * 10
    tree = results[1]["solutions"][0]["tree"]
    forall = tree["children"][0]
    assert forall["clause"] == "forall/2" and forall["children"][1]["goal"] == "nice(a)"
    assert forall["children"][1]["clause"].endswith("issue.pl:9")


def _ask_reply(goals):
    def reply(body):
        purpose = body["_logicpipe"]["purpose"]
        if purpose == "kb-goals":
            return "```prolog\n" + goals[body["_logicpipe"]["problem"]] + "\n```"
        if purpose == "kb-claims":
            return json.dumps([{"claim": "it holds", "goal": goals[body["_logicpipe"]["problem"]]}])
        return "ANSWER"
    return reply


def _model(server, tmp_path):
    return ["--model", "fake", "--base-url", server.url, "--llm-cache", str(tmp_path / "cache.sqlite")]


def test_hostile_and_deep_goals_through_ask_and_validate_batches(kbcli, kb, tmp_path):
    marker = tmp_path / "M"
    nested = "X = " + "f(" * 500 + "a" + ")" * 500
    goals = {"evil": f"holds(shell('touch {marker}')).", "loop": f"apply_all([shell], 'touch {marker}').",
             "deep": nested + ".", "sum": "X is " + " + ".join(["1"] * 1500) + ".", "fine": "path(a, d).",
             "op": "X ===> b.", "negs": "\\+ " * 301 + "nice(b)."}
    questions = tmp_path / "q.jsonl"
    questions.write_text("".join(json.dumps({"id": k, "question": k}) + "\n" for k in goals))
    answers = tmp_path / "a.jsonl"
    answers.write_text("".join(json.dumps({"id": k, "answer": k}) + "\n" for k in goals))
    with FakeOpenAI(_ask_reply(goals)) as server:
        asked = kbcli("kb", "ask", str(kb), "--questions", str(questions), "--out", str(tmp_path / "askrun"),
                      *_model(server, tmp_path))
        checked = kbcli("kb", "validate", str(kb), "--answers", str(answers), "--out", str(tmp_path / "vrun"),
                        *_model(server, tmp_path))
    assert asked.returncode == 0 and checked.returncode == 0, asked.stderr + checked.stderr
    assert not marker.exists()
    records = {r["id"]: r for r in map(json.loads, (tmp_path / "askrun" / "ask.jsonl").read_text().splitlines())}
    assert sorted(records) == sorted(goals)
    status = {k: r["results"][0]["status"] for k, r in records.items()}
    assert status == {"evil": "unknown", "loop": "unknown", "deep": "proved", "sum": "proved", "fine": "proved",
                      "op": "proved", "negs": "proved"}
    for line in (tmp_path / "askrun" / "ask.jsonl").read_text().splitlines():  # a resumed run reads every record back
        AskRecord.model_validate_json(line)
    assert records["op"]["goals"] == ["X ===> b"]
    assert records["sum"]["results"][0]["solutions"][0]["bindings"] == {"X": "1500"}
    assert "could not decide holds(shell(" in records["evil"]["context"]
    verdicts = {r["id"]: r["claims"][0]["verdict"] for r in map(json.loads, (tmp_path / "vrun" / "validate.jsonl").read_text().splitlines())}
    assert verdicts == {"evil": "unknown", "loop": "unknown", "deep": "true", "sum": "true", "fine": "true",
                        "op": "true", "negs": "true"}


def test_a_proof_500_levels_deep_is_answered_and_its_tree_cut_at_a_bounded_depth(kbcli, tmp_path):
    chain = tmp_path / "chain.pl"
    chain.write_text("".join(f"link(n{i}, n{i + 1}).\n" for i in range(1000))
                     + "reach(X, Y) :- link(X, Y).\nreach(X, Y) :- link(X, Z), reach(Z, Y).\n")
    [deep] = prove(kbcli, chain, "reach(n0, n500)", extra=["--depth", "100000"])
    assert deep["status"] == "proved"
    node, levels = deep["solutions"][0]["tree"], 0
    while node["children"]:
        node, levels = node["children"][-1], levels + 1
    assert node["clause"] == "depth limit: not expanded" and levels == 64
    text = kbcli("kb", "prove", str(chain), "reach(n0, n999)")
    assert text.returncode == 0 and "yes: proved" in text.stdout
    dot = kbcli("kb", "prove", str(chain), "reach(n0, n500)", "-f", "dot")
    assert dot.returncode == 0 and dot.stdout.count("->") == 64 * 2


def test_three_verdicts_in_json_and_text(kbcli, kb):
    undefined, spin, many = prove(kbcli, kb, "broken", "spin(0)", "path(a, X)",
                                  extra=["--inferences", "100000", "--max-solutions", "2"])
    assert undefined["status"] == "unknown" and "missing_predicate/0" in undefined["reason"]
    assert spin["status"] == "unknown" and spin["reason"] == "inference limit exceeded" and spin["limit"] == "inferences"
    assert many["status"] == "proved" and many["truncated"] is True and len(many["solutions"]) == 2
    [failed] = prove(kbcli, kb, "edge(d, _)")
    assert failed["status"] == "failed" and failed["truncated"] is False and "reason" not in failed
    text = kbcli("kb", "prove", str(kb), "broken", "edge(d, a)", "path(a, X)", "--max-solutions", "1")
    assert text.returncode == 1
    assert "unknown: Unknown procedure: kb:missing_predicate/0" in text.stdout
    assert "no: not derivable" in text.stdout
    assert "yes: proved (solutions cut: more than --max-solutions)" in text.stdout


def test_printing_round_trips_and_the_reader_takes_standard_syntax(kbcli, kb):
    results = prove(kbcli, kb, "\\+ (edge(a, b), edge(b, a))", "X is 10 - (4 - 3)", "X = a:b, Y = {a}",
                    "X is 0b101 + 1_000_000 + 0'a + 0x1F", "X ===> b", "Y = - (1), Z = -(-(1)), W = 1 - -1")
    assert [r["goal"] for r in results] == ["\\+ (edge(a, b), edge(b, a))", "X is 10 - (4 - 3)",
                                            "X = a:b, Y = {a}", "X is 5 + 1000000 + 97 + 31", "X ===> b",
                                            "Y = -(1), Z = - -(1), W = 1 - (-1)"]
    assert [r["status"] for r in results] == ["proved"] * 6
    assert results[1]["solutions"][0]["bindings"] == {"X": "9"}
    assert results[2]["solutions"][0]["bindings"] == {"X": "a:b", "Y": "{a}"}
    assert results[3]["solutions"][0]["bindings"] == {"X": "1000133"}
    assert results[4]["solutions"][0]["bindings"] == {"X": "a"}
    assert results[5]["solutions"][0]["bindings"] == {"Y": "- 1", "Z": "- - 1", "W": "1- -1"}


def test_graphviz_labels_are_utf8_not_json_escapes(kbcli, kb):
    done = kbcli("kb", "prove", str(kb), "place(X)", "-f", "dot")
    assert "münchen" in done.stdout and "\\u00fc" not in done.stdout


TERMS = ["\\+ (a, b)", "10 - (4 - 3)", "10 - 4 - 3", "2 ** (3 ** 4)", "- (1)", "-(-1)", "- a",
         "1 - -1", "a = (\\+ b)", "f(-, +, (:-), [-])", "(a , b) = c", "[a, b|T] = [(c ; d)]", "{a, b}", "'hello world'",
         "f('\\n', \"s\\\"q\")", "x is (a -> b ; c)", "- (- a)", "- (2 ^ 3)", "(- 2) ^ 3", "-(2) ^ 3", "a:b:c",
         "(a:b):c", "f(a, (b, c))", "\\+ \\+ a", "p(;, '|', [])", "X = (dynamic a)", "- (a + b)", "1 + (- 2)",
         "[- 1, -1, - a]", "(a = b) = c", "a = (b = c)", "- - 1", "\\ (a + b)"]


def test_show_reads_back_in_swipl_as_the_same_term():
    """Independent oracle: SWI-Prolog reads what show() writes and compares it with the canonical text."""
    lines = []
    for text in TERMS:
        term = parse_term(text)
        lines.append(json.dumps([show(term), canonical(term)]))
    program = ("main :- read_term(S, []), forall(member([A, B], S), "
               "( term_string(X, A), term_string(Y, B), ( X =@= Y -> writeln(same) ; format('~q vs ~q~n', [X, Y]) ) )).")
    listing = "[" + ",".join(lines) + "]."
    done = subprocess.run([swipl_path(), "-q", "-g", program.replace("main :- ", ""), "-t", "halt"],
                          input=listing, capture_output=True, text=True, timeout=60)
    assert done.stdout.splitlines() == ["same"] * len(TERMS), (done.stdout, done.stderr)


def test_what_swipl_writes_the_python_reader_reads_as_the_same_term():
    """The other direction: SWI-Prolog writes each term as the engine's trees do (writeq style), the
    Python reader parses that text, and SWI-Prolog compares the canonical text with the original."""
    source = "[" + ", ".join(f"({t})" for t in TERMS) + "]"
    write = ("read_term(user_input, Ts, []), forall(member(T, Ts), ( format('~W~n', [T, [quoted(true), "
             "spacing(next_argument), ignore_ops(false)]]) ))")
    written = subprocess.run([swipl_path(), "-q", "-g", write, "-t", "halt"], input=source + ".",
                             capture_output=True, text=True, timeout=60).stdout.splitlines()
    assert len(written) == len(TERMS)
    pairs = [json.dumps([text, canonical(parse_term(text))]) for text in written]
    compare = ("read_term(S, []), forall(member([A, B], S), ( term_string(X, A), term_string(Y, B), "
               "( X =@= Y -> writeln(same) ; format('~q vs ~q~n', [X, Y]) ) ))")
    done = subprocess.run([swipl_path(), "-q", "-g", compare, "-t", "halt"], input="[" + ",".join(pairs) + "].",
                          capture_output=True, text=True, timeout=60)
    assert done.stdout.splitlines() == ["same"] * len(TERMS), (written, done.stdout, done.stderr)


def test_deep_and_long_terms_read_and_write_without_recursion():
    nested = "f(" * 5000 + "a" + ")" * 5000
    [term] = parse_goals(nested)
    assert show(term).count("(") == 5000 and canonical(term) == nested
    total = parse_term(" + ".join(str(i) for i in range(20000)))
    assert show(total).startswith("0 + 1 + 2") and canonical(total).count("'+'(") == 19999
    negations = parse_term("\\+ " * 3000 + "a")
    assert show(negations) == "\\+ " * 3000 + "a"


def test_a_kb_is_compiled_once_and_then_loaded_from_the_cache(kbcli, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("LOGICPIPE_KB_CACHE", str(cache))
    path = tmp_path / "warned.pl"
    path.write_text("p(a).\np(b).\nq(X) :- p(Y).\nr(X) :- p(X).\n")
    first = kbcli("kb", "prove", str(path), "r(X)")
    [compiled] = list(cache.glob("*/kb.qlf"))
    stamp = compiled.stat().st_mtime_ns
    second = kbcli("kb", "prove", str(path), "r(X)")
    assert compiled.stat().st_mtime_ns == stamp  # loaded, not compiled again
    for done in (first, second):  # the same answers, trees and load warnings either way
        assert done.returncode == 0 and f"{path}:3: warning: Singleton variables: [X,Y]" in done.stderr
        assert "solution 2: X = b" in done.stdout and f"r(b)  [{path}:4]" in done.stdout
    path.write_text("p(a).\nr(X) :- p(X).\n")  # new content: a new entry
    assert "solution 2" not in kbcli("kb", "prove", str(path), "r(X)").stdout
    assert len(list(cache.glob("*/kb.qlf"))) == 2
    broken = tmp_path / "broken.pl"
    broken.write_text("ok(a).\nbad(X :- .\n")
    for _ in range(2):  # a KB with errors is never kept compiled: each load reports them
        done = kbcli("kb", "prove", str(broken), "ok(a)")
        assert done.returncode == 2 and f"{broken}:2" in done.stderr
    assert len(list(cache.glob("*/kb.qlf"))) == 2


def test_validate_gives_unknown_when_the_engine_cannot_run_the_goal(kb):
    with KnowledgeBase(kb) as base:
        broken = judge(base, "a is nice", "nice(a)", [parse_percept("nice=b")])  # nice/1 is static in the KB
        assert broken.verdict == "unknown" and "defined statically" in broken.reason
        assert judge(base, "it holds", "broken").verdict == "unknown"
        assert judge(base, "d has an edge", "edge(d, _)").verdict == "not derivable"
        assert judge(base, "shell", "shell(x)").verdict == "untranslatable"


MODULE_KB = """\
:- module(family, [parent/2, ancestor/2, holds/1, grandparent/2]).
parent(tom, bob). parent(bob, ann). parent(ann, joe).
grandparent(X, Z) :- step(X, Y), step(Y, Z).
step(X, Y) :- parent(X, Y).
ancestor(X, Y) :- parent(X, Y).
ancestor(X, Y) :- ancestor(X, Z), parent(Z, Y).
holds(G) :- call(G).
"""


def test_a_module_kb_answers_as_swipl_tabling_its_left_recursion_and_keeps_the_sandbox(kbcli, tmp_path):
    kb = tmp_path / "family.pl"
    kb.write_text(MODULE_KB)
    marker = tmp_path / "M"
    [anc, neg, evil, grand] = prove(kbcli, kb, "ancestor(tom, X)", "\\+ ancestor(joe, tom)",
                                    f"holds(shell('touch {marker}'))", "grandparent(tom, ann)")
    # The oracle: plain swipl on the same file, with the left-recursive predicate tabled by hand.
    goal = (f"use_module('{kb}'), table(family:ancestor/2), findall(X, ancestor(tom, X), L), "
            "msort(L, S), print(S), nl")
    done = subprocess.run([swipl_path(), "-q", "-g", goal, "-t", "halt"], capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 0, done.stderr
    assert "[" + ",".join(sorted(s["bindings"]["X"] for s in anc["solutions"])) + "]" == done.stdout.strip()
    assert anc["status"] == "proved" and neg["status"] == "proved"
    assert evil["status"] == "unknown" and not marker.exists()
    # A helper the module does not export is explained in its module, down to the facts.
    tree = grand["solutions"][0]["tree"]
    assert [c["goal"] for c in tree["children"]] == ["family:step(tom, bob)", "family:step(bob, ann)"]
    assert tree["children"][0]["children"][0]["goal"] == "parent(tom, bob)"
