"""`kb check` through the CLI, with plain swipl's library(check) as the oracle for undefined procedures."""

import json
import re
import subprocess

from logicpipe.solvers.lp import swipl_path
from tests.conftest import ROOT

ISSUE_KB = """\
edge(a,b). edge(b,c). edge(c,a). edge(c,d).
path(X,Y) :- edge(X,Y).
path(X,Y) :- path(X,Z), edge(Z,Y).
grade(S, high) :- S >= 90, !.
grade(S, mid) :- S >= 50, !.
grade(_, low).
holds(G) :- G.
report(X) :- grade(X, G), shout(G), log_line(X, G).
"""


def plain_swipl_undefined(path):
    """What SWI-Prolog itself lists as undefined, from its printed report."""
    done = subprocess.run([swipl_path(), "-q", "-g", f"consult('{path}'), check:list_undefined", "-t", "halt"],
                          capture_output=True, text=True, timeout=60)
    return sorted(re.findall(r"^Warning: (\S+/\d+), which is referenced by", done.stderr, re.M))


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_undefined_procedures_fail_the_check_as_plain_swipl_finds_them(kbcli, tmp_path):
    kb = write(tmp_path, "t.pl", ISSUE_KB)
    done = kbcli("kb", "check", str(kb))
    assert done.returncode == 1
    found = sorted(re.findall(r"calls (\S+), which is not defined", done.stderr))
    assert found == plain_swipl_undefined(kb) == ["log_line/2", "shout/1"]
    assert f"{kb}:8: error: report/1 calls shout/1, which is not defined" in done.stderr.splitlines()
    assert f"{kb}:3: note: path/2 is left-recursive (path/2 -> path/2); the engine tables it" in done.stderr
    assert "grade/2                          3 clauses" in done.stdout


def test_a_clean_kb_passes_and_tabling_helpers_are_not_listed(kbcli, tmp_path):
    kb = write(tmp_path, "tab.pl", ":- table path/2.\n" + ISSUE_KB.replace("report(X)", "% report(X)"))
    done = kbcli("kb", "check", str(kb))
    assert done.returncode == 0, done.stderr
    assert plain_swipl_undefined(kb) == []
    names = [line.split()[0] for line in done.stdout.splitlines()]
    assert names == ["edge/2", "grade/2", "holds/1", "path/2"]
    assert "(tabled)" in done.stdout.splitlines()[3]
    assert "path/2 is left-recursive (path/2 -> path/2); declared tabled" in done.stderr


def test_mutual_left_recursion_names_the_cycle(kbcli, tmp_path):
    kb = write(tmp_path, "m.pl", "a(X) :- X \\== 3, \\+ c(X), b(X).\na(1).\nb(X) :- a(X).\nc(2).\n"
                                 "d(X) :- c(X), d(X).\n")
    done = kbcli("kb", "check", str(kb), "--format", "json")
    assert done.returncode == 0, done.stderr
    left = {item["predicate"]: item for item in json.loads(done.stdout)["left_recursive"]}
    assert sorted(left) == ["a/1", "b/1"]  # d/1 calls c/1 first: not left-recursive
    assert left["a/1"]["via"] == ["a/1", "b/1", "a/1"] and left["a/1"]["line"] == 1
    assert left["b/1"]["line"] == 3


def test_unreachable_discontiguous_and_duplicate_clauses(kbcli, tmp_path):
    kb = write(tmp_path, "u.pl", "size(_, S) :- !, S = big.\nsize(elephant, huge).\ncolour(sky, blue).\n"
                                 "size(mouse, small).\ncolour(sky, blue).\nfirst(X, Y) :- X = Y, !.\n"
                                 "first(_, _).\nlast(X, Y) :- !, X = Y.\nlast(_, _).\n")
    done = kbcli("kb", "check", str(kb))
    assert done.returncode == 0, done.stderr  # warnings only
    lines = done.stderr.splitlines()
    assert f"{kb}:2: warning: unreachable clause of size/2: the clause at line 1 matches every call it " \
           "matches and cuts first" in lines
    assert f"{kb}:4: warning: unreachable clause of size/2: the clause at line 1 matches every call it " \
           "matches and cuts first" in lines
    assert f"{kb}:4: warning: clauses of size/2 are not together (declare :- discontiguous size/2. if that " \
           "is meant)" in lines
    assert f"{kb}:5: warning: duplicate clause of colour/2 (the same as line 3)" in lines
    assert f"{kb}:9: warning: unreachable clause of last/2: the clause at line 8 matches every call it " \
           "matches and cuts first" in lines
    assert not any(":7:" in line for line in lines)  # first/2 cuts only once X = Y succeeded


def test_a_folder_that_redefines_a_predicate_or_a_builtin(kbcli, tmp_path):
    folder = tmp_path / "kb"
    folder.mkdir()
    write(folder, "a.pl", "p(1).\nq(1).\n")
    write(folder, "b.pl", "p(2).\nlength(a, b).\n")
    done = kbcli("kb", "check", str(folder))
    assert done.returncode == 1
    assert f"{folder / 'b.pl'}:1: warning: p/1 is defined again here, replacing an earlier file's clauses" \
        in done.stderr
    assert f"{folder / 'b.pl'}:2: error: length/2 is a builtin and cannot be redefined" in done.stderr


def test_a_module_kb_is_checked_in_its_own_module(kbcli, tmp_path):
    kb = write(tmp_path, "family.pl", ":- module(family, [grandparent/2]).\nparent(tom, bob).\n"
                                      "parent(bob, ann).\ngrandparent(X, Z) :- parent(X, Y), parent(Y, Z).\n")
    done = kbcli("kb", "check", str(kb), "--format", "json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["modules"] == ["family"]
    shown = {(p["module"], p["name"], p["arity"], p["exported"]) for p in report["predicates"]}
    assert shown == {("family", "parent", 2, False), ("family", "grandparent", 2, True)}
    broken = write(tmp_path, "broken.pl", ":- module(broken, [r/1]).\nr(X) :- s(X).\n")
    done = kbcli("kb", "check", str(broken))
    assert done.returncode == 1
    assert f"{broken}:2: error: broken:r/1 calls broken:s/1, which is not defined" in done.stderr
    assert done.stdout.split() == ["broken:r/1", "1", "clause", str(broken)]  # one clause, not "1 clauses"


def test_load_errors_fail_and_a_looping_directive_is_bounded(kbcli, tmp_path):
    bad = write(tmp_path, "bad.pl", "ok(1).\nbroken(( .\n")
    done = kbcli("kb", "check", str(bad))
    assert done.returncode == 1 and f"{bad}:2: error: " in done.stderr
    loop = write(tmp_path, "loop.pl", ":- repeat, fail.\n")
    done = kbcli("kb", "check", str(loop), "--time", "1")
    assert done.returncode == 2
    assert done.stderr.strip() == "error: kb check: SWI-Prolog did not finish within 1 s"


def test_the_example_kb_checks_clean_with_its_tabled_predicate_and_its_cut(kbcli):
    campus = ROOT / "examples" / "kb" / "campus.pl"
    done = kbcli("kb", "check", str(campus))
    assert done.returncode == 0, done.stderr
    assert [line for line in done.stderr.splitlines() if not line.startswith(("isolation:", "note: OS jail"))] == [
        f"{campus}:117: note: linked/2 is left-recursive (linked/2 -> linked/2); the engine tables it",
        f"{campus}:138: note: connected/2 is left-recursive (connected/2 -> connected/2); declared tabled"]
    shown = {line.split()[0]: line for line in done.stdout.splitlines()}
    assert shown["connected/2"].endswith("(tabled)") and "grade/2" in shown
    assert not any(name.startswith("$") for name in shown)
    assert plain_swipl_undefined(campus) == []


def test_a_directive_loading_a_missing_file_is_a_load_error_with_its_line(kbcli, tmp_path):
    # The error's context is unbound; the message hook once bound it and left file and line unbound,
    # so `kb prove` failed with "the engine could not write its reply" and `kb check` crashed.
    kb = write(tmp_path, "kb.pl", "p(1).\n:- consult(nowhere).\n")
    plain = subprocess.run([swipl_path(), "-q", "-g", f"consult('{kb}')", "-t", "halt"], capture_output=True,
                           text=True, timeout=60)
    assert "source_sink `nowhere' does not exist" in plain.stderr  # the oracle's words
    said = f"{kb}:2: error: source_sink `nowhere' does not exist"
    proved = kbcli("kb", "prove", str(kb), "p(X)")
    assert proved.returncode != 0 and f"the KB does not load: {said}" in proved.stderr, proved.stderr
    checked = kbcli("kb", "check", str(kb))
    assert checked.returncode == 1 and said in checked.stderr.splitlines(), checked.stderr
