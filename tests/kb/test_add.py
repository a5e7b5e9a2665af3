"""`kb add` / `kb retract` through the CLI: checks against the KB's facts, diff, confirmation, backup;
plain swipl reads the changed file as the oracle of what the KB now holds."""

import json
import os
import pty
import subprocess
import sys

from logicpipe.solvers.lp import swipl_path
from logicpipe.testing import FakeOpenAI
from tests.conftest import ROOT

CAMPUS = ROOT / "examples" / "kb" / "campus.pl"


def swipl_facts(path, goal_template):
    """The solutions of `findall(T, T, L)` for a template such as 'student(_)', by plain swipl."""
    goal = f"consult('{path}'), findall(T, (T = {goal_template}, call(T)), L), print(L), nl"
    done = subprocess.run([swipl_path(), "-q", "-g", goal, "-t", "halt"], capture_output=True, text=True,
                          timeout=60)
    return done.stdout.strip()


def campus_copy(tmp_path):
    kb = tmp_path / "campus.pl"
    kb.write_text(CAMPUS.read_text())
    return kb


def test_add_checks_types_and_duplicates_and_a_rerun_adds_nothing_twice(kbcli, tmp_path):
    kb = campus_copy(tmp_path)
    facts = ["--fact", "passed(erin, phil101, 81)", "--fact", 'passed(erin, math101, "lots")',
             "--fact", "student(zoe)", "--fact", "student(alice)", "--fact", "student(zoe)",
             "--fact", "likes(erin, tea)", "--fact", "passed(erin, cs101)", "--fact", "teaches(X, cs101)",
             "--fact", "eligible(bob, cs301)", "--fact", "p_hour(3)"]
    done = kbcli("kb", "add", str(kb), *facts, "--yes")
    assert done.returncode == 1, done.stderr  # written, but some facts were refused
    errors = done.stderr.splitlines()
    assert 'refused: passed(erin, math101, "lots") -- argument 3 of passed/3 is a string ("lots"), but every ' \
           'fact of passed/3 has a number there' in errors
    assert "refused: likes(erin, tea) -- likes/2 is not a predicate of the KB" in errors
    assert "refused: passed(erin, cs101) -- passed/2 is not a predicate of the KB" in errors
    assert "refused: teaches(X, cs101) -- a fact must not contain variables" in errors
    assert "refused: eligible(bob, cs301) -- eligible/2 is defined by rules; add facts to the predicates it " \
           "is derived from" in errors
    assert any(line.startswith("refused: p_hour(3) -- p_hour/1 has no facts") for line in errors)
    assert "skipped: student(alice). -- already in the KB" in errors
    assert "skipped: student(zoe). -- already in this request" in errors
    assert f"added 2 fact(s); backup: {kb}.bak" in errors
    added = [line for line in done.stdout.splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert added == ["+student(zoe).", "+passed(erin, phil101, 81)."]
    assert (tmp_path / "campus.pl.bak").read_text() == CAMPUS.read_text()
    lines = kb.read_text().splitlines()
    assert lines[lines.index("student(erin).") + 1] == "student(zoe)."  # beside its predicate's clauses
    assert lines[lines.index("passed(dave, math101, 55).") + 1] == "passed(erin, phil101, 81)."
    assert swipl_facts(kb, "student(_)") == "[student(alice),student(bob),student(carol),student(dave)," \
                                            "student(erin),student(zoe)]"
    again = kbcli("kb", "add", str(kb), "--fact", "passed(erin, phil101, 81)", "--fact", "student(zoe)", "--yes")
    assert again.returncode == 0 and "nothing to change" in again.stderr
    assert kb.read_text().count("student(zoe).") == 1
    check = kbcli("kb", "check", str(kb))
    assert check.returncode == 0 and "student/1                        6 clauses" in check.stdout


def test_without_a_terminal_or_yes_nothing_is_asked_or_written(kbcli, tmp_path):
    kb = campus_copy(tmp_path)
    done = kbcli("kb", "add", str(kb), "--fact", "student(zoe)")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == ("error: stdin is not a terminal, so the change cannot be confirmed: pass --yes to "
                           "write it, or --dry-run to only show it\n")
    shown = kbcli("kb", "add", str(kb), "--fact", "student(zoe)", "--dry-run")
    assert shown.returncode == 0 and "+student(zoe).\n" in shown.stdout
    assert kb.read_text() == CAMPUS.read_text() and not (tmp_path / "campus.pl.bak").exists()


def test_retract_takes_out_one_clause_and_keeps_its_neighbours(kbcli, tmp_path):
    kb = tmp_path / "graph.pl"
    kb.write_text("edge(a, b). edge(b, c).  % two on a line\nedge(c, d).\npath(X, Y) :- edge(X, Y).\n")
    done = kbcli("kb", "retract", str(kb), "--fact", "edge(a,b)", "--fact", "edge(c,d)", "--fact", "edge(x,y)",
                 "--yes")
    assert done.returncode == 0, done.stderr
    assert "skipped: edge(x, y). -- not in the KB" in done.stderr
    assert kb.read_text() == "edge(b, c).  % two on a line\npath(X, Y) :- edge(X, Y).\n"
    assert swipl_facts(kb, "edge(_, _)") == "[edge(b,c)]"
    assert (tmp_path / "graph.pl.bak").read_text().startswith("edge(a, b). edge(b, c).")
    same = kbcli("kb", "add", str(kb), "--remove", "--fact", "edge(b, c)", "--yes")
    assert same.returncode == 0 and kb.read_text() == "% two on a line\npath(X, Y) :- edge(X, Y).\n"


def test_a_fact_goes_after_its_predicate_even_with_code_on_the_same_line(kbcli, tmp_path):
    kb = tmp_path / "k.pl"
    kb.write_text("p(1). q(X) :-\n    p(X).\n")
    done = kbcli("kb", "add", str(kb), "--fact", "p(2)", "--yes")
    assert done.returncode == 0, done.stderr
    assert kb.read_text() == "p(1).\np(2). q(X) :-\n    p(X).\n"
    assert swipl_facts(kb, "q(_)") == "[q(1),q(2)]"


def test_a_change_that_breaks_the_kb_is_undone(kbcli, tmp_path):
    kb = tmp_path / "k.pl"
    text = "p(1).\n:- aggregate_all(count, p(_), N), N > 1 -> throw(too_many_p) ; true.\n"
    kb.write_text(text)
    done = kbcli("kb", "add", str(kb), "--fact", "p(2)", "--yes")
    assert done.returncode == 2
    assert done.stderr.startswith("error: the change was undone: it would no longer load (")
    assert kb.read_text() == text


def test_a_module_kb_gets_its_fact_in_the_module_file(kbcli, tmp_path):
    kb = tmp_path / "family.pl"
    kb.write_text(":- module(family, [parent/2]).\nparent(tom, bob).\nparent(bob, ann).\n")
    done = kbcli("kb", "add", str(kb), "--fact", "parent(ann, joe)", "--fact", "parent(ann, 7)", "--yes")
    assert done.returncode == 1
    assert "argument 2 of family:parent/2 is a number (7), but every fact of family:parent/2 has an atom" \
        in done.stderr
    assert kb.read_text().endswith("parent(bob, ann).\nparent(ann, joe).\n")


def test_a_statement_is_translated_with_the_kb_add_template(kbcli, tmp_path):
    kb = campus_copy(tmp_path)

    def reply(body):
        assert body["_logicpipe"]["purpose"] in ("kb-add", "kb-retract")
        if body["_logicpipe"]["purpose"] == "kb-retract":
            return "```prolog\nenrolled(erin, phil101).\n```"
        if "Frank" in body["messages"][1]["content"]:
            return "```prolog\nstudent(frank).\n```"
        return "```prolog\nenrolled(erin, cs101).\nstudent(zoe).\nlikes(erin, tea).\n```"

    folder = tmp_path / "prompts"
    folder.mkdir()
    own = "Own add prompt.\n=== user ===\nPredicates:\n{{signatures}}\n{{facts}}\nSAY: {{statement}}\n"
    (folder / "kb-add.txt").write_text(own)
    model = ["--model", "fake", "--llm-cache", str(tmp_path / "cache.sqlite")]
    with FakeOpenAI(reply) as server:
        done = kbcli("kb", "add", str(kb), "Erin enrolled in cs101; Zoe is a student.", "--yes",
                     "--base-url", server.url, *model)
        assert done.returncode == 1, done.stderr
        assert "refused: likes(erin, tea) -- likes/2 is not a predicate of the KB" in done.stderr
        own_done = kbcli("kb", "add", str(kb), "Frank is a student.", "--dry-run", "--prompts", str(folder),
                         "--base-url", server.url, *model)
        gone = kbcli("kb", "retract", str(kb), "Erin left phil101.", "--yes", "--base-url", server.url, *model)
        sent = [body["messages"] for body in server.requests]
    assert gone.returncode == 0, gone.stderr
    assert sent[0][0]["content"].startswith("You translate a statement into Prolog facts")
    assert "Statement: Erin enrolled in cs101; Zoe is a student." in sent[0][1]["content"]
    assert "- enrolled/2" in sent[0][1]["content"]
    assert own_done.returncode == 0 and "+student(frank)." in own_done.stdout
    assert sent[1][0]["content"] == "Own add prompt."
    assert "SAY: Frank is a student." in sent[1][1]["content"]
    assert sent[2][0]["content"].startswith("You find the Prolog facts of a knowledge base")
    assert swipl_facts(kb, "enrolled(erin, _)") == "[enrolled(erin,cs101)]"


def _in_a_terminal(args, answer, cwd):
    """Run `logicpipe ARGS` with a pseudo-terminal as stdin; type `answer` at the prompt."""
    main, child = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "logicpipe", *args], stdin=child, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, cwd=cwd, env=dict(os.environ, COLUMNS="200"))
    os.close(child)
    os.write(main, answer.encode())
    out, err = process.communicate(timeout=120)
    os.close(main)
    return process.returncode, out.decode(), err.decode()


def test_in_a_terminal_the_change_is_asked_for(tmp_path):
    kb = campus_copy(tmp_path)
    code, out, err = _in_a_terminal(["kb", "add", str(kb), "--fact", "student(zoe)"], "n\n", ROOT)
    assert code == 0 and "+student(zoe)." in out and "nothing written" in err
    assert "Write 1 change(s) to" in out
    assert kb.read_text() == CAMPUS.read_text()
    code, out, err = _in_a_terminal(["kb", "add", str(kb), "--fact", "student(zoe)"], "y\n", ROOT)
    assert code == 0, err
    assert f"added 1 fact(s); backup: {kb}.bak" in err and "student(zoe)." in kb.read_text()
    assert json.loads(json.dumps(swipl_facts(kb, "student(zoe)"))) == "[student(zoe)]"


def test_a_fact_text_holding_two_facts_is_refused_not_cut_to_the_first(kbcli, tmp_path):
    # term_string/2 read the first term only: "student(yan). student(zed)" added student(yan) silently.
    kb = campus_copy(tmp_path)
    done = kbcli("kb", "add", str(kb), "--fact", "student(yan). student(zed)", "--fact", "student(xu).", "--yes")
    assert "refused: student(yan). student(zed) -- syntax error: one fact per --fact" in done.stderr, done.stderr
    assert swipl_facts(kb, "student(_)") == "[student(alice),student(bob),student(carol),student(dave)," \
                                            "student(erin),student(xu)]"
