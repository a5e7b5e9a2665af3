"""What the fresh-eyes red team of the OS jail found, each through the real `kb prove`: a KB's code may
not reach another KB's compiled cache, a goal may not read the hidden files beside a KB, and the
engine that answers goals writes nowhere, so no goal leaves a file for the next one."""

from __future__ import annotations

import json

import pytest

from logicpipe.core import jail
from logicpipe.core.errors import UsageError
from tests.kb.oracle import swipl_says

pytestmark = pytest.mark.skipif(not jail.status().active, reason=f"no OS jail here: {jail.status().reason}")

SPOIL = """:- initialization(spoil).
spoil :- forall(( source_file(F), atom_concat(D, '/kb.pl', F) ),
                ( atom_concat(D, '/kb.qlf', Q),
                  catch(( open(Q, write, S), write(S, garbage), close(S) ), _, true) )).
"""
FAMILY = "parent(tom, bob).\nparent(bob, ann).\n"


def _answers(kbcli, kb, goal, *extra):
    done = kbcli("kb", "prove", str(kb), goal, "--format", "json", *extra)
    return [json.loads(line) for line in done.stdout.splitlines()], done


def test_a_kb_cannot_spoil_the_compiled_cache_of_another_kb_with_the_same_file(tmp_path, kbcli, monkeypatch):
    """A folder KB whose load-time code writes every compiled file it can see while it compiles; a
    second KB holding the same family file must still answer from its own source."""
    monkeypatch.setenv("LOGICPIPE_KB_CACHE", str(tmp_path / "cache"))
    (tmp_path / "spoiler").mkdir()
    (tmp_path / "spoiler" / "a_family.pl").write_text(FAMILY)
    (tmp_path / "spoiler" / "z_spoil.pl").write_text(SPOIL)
    _answers(kbcli, tmp_path / "spoiler", "parent(tom, X)")
    spoiled = [p for p in (tmp_path / "cache").rglob("kb.qlf") if p.read_bytes().startswith(b"garbage")]
    assert spoiled, "the spoiler did not reach its own entries: this test would show nothing"
    before = set((tmp_path / "cache").iterdir())
    victim = tmp_path / "victim.pl"
    victim.write_text(FAMILY)
    results, done = _answers(kbcli, victim, "parent(tom, X)")
    # An entry of its own (keyed by the whole KB), never the spoiler's entry for the same file's text.
    assert len(set((tmp_path / "cache").iterdir()) - before) == 1
    assert [s["bindings"] for s in results[0]["solutions"]] == [{"X": "bob"}], done
    assert swipl_says(victim, "parent(tom, bob)") == "true"


def test_a_goal_cannot_read_the_hidden_files_beside_a_kb_that_loads_others(tmp_path, kbcli):
    """A KB that loads a helper by relative path sees its folder, less the folder's dot entries."""
    (tmp_path / ".ssh").mkdir()
    (tmp_path / ".ssh" / "id_rsa").write_text("SECRET KEY")
    (tmp_path / ".env").write_text("OPENAI_API_KEY=sk-secret")
    (tmp_path / "helpers.pl").write_text("helper(1).\n")
    kb = tmp_path / "kb.pl"
    kb.write_text(":- ensure_loaded(helpers).\nslurp(F, S) :- read_file_to_string(F, S, []).\n")
    for secret in (".ssh/id_rsa", ".env"):
        results, done = _answers(kbcli, kb, f"slurp('{tmp_path}/{secret}', S)",
                                 "--allow", "read_file_to_string/3")
        assert "secret" not in done.stdout.lower() and results[0]["status"] != "proved", done
    helper, _ = _answers(kbcli, kb, f"slurp('{tmp_path}/helpers.pl', S)", "--allow", "read_file_to_string/3")
    assert helper[0]["status"] == "proved"  # the folder itself is there: the KB loads from it


def test_hidden_files_deeper_in_the_shown_folder_are_hidden_too(tmp_path, kbcli, monkeypatch):
    """Only the folder's own dot entries were masked: `sub/.env` and `sub/.git/config` were readable
    (found by a red-team session that had not seen the code). A folder too large to walk is refused."""
    (tmp_path / "sub" / ".git").mkdir(parents=True)
    (tmp_path / "sub" / ".git" / "config").write_text("token = SECRET-GIT")
    (tmp_path / "sub" / ".env").write_text("OPENAI_API_KEY=sk-SECRET")
    (tmp_path / "sub" / "notes.txt").write_text("plain notes")
    (tmp_path / "helpers.pl").write_text("helper(1).\n")
    kb = tmp_path / "kb.pl"
    kb.write_text(":- ensure_loaded(helpers).\nslurp(F, S) :- read_file_to_string(F, S, []).\n")
    for secret in ("sub/.env", "sub/.git/config"):
        results, done = _answers(kbcli, kb, f"slurp('{tmp_path}/{secret}', S)", "--allow", "read_file_to_string/3")
        assert "secret" not in done.stdout.lower() and results[0]["status"] != "proved", done
    # A dangling hidden link cannot be masked, and need not be (a second red team broke the jail with one).
    (tmp_path / "sub" / ".gone").symlink_to("/nonexistent/secret")
    plain, _ = _answers(kbcli, kb, f"slurp('{tmp_path}/sub/notes.txt', S)", "--allow", "read_file_to_string/3")
    assert plain[0]["status"] == "proved"  # the rest of the tree is shown
    for number in range(30):
        (tmp_path / "sub" / f"f{number}").write_text("")
        (tmp_path / "sub" / f".h{number}").write_text("")
    from logicpipe.kb.prolog import kb_view

    for bound in ("MAX_SHOWN_ENTRIES", "MAX_HIDDEN_ENTRIES"):  # each alone: the walk, and bubblewrap's arguments
        with monkeypatch.context() as patched:
            patched.setattr(f"logicpipe.kb.prolog.{bound}", 25)
            with pytest.raises(UsageError, match="keep the KB in a folder of its own"):
                kb_view([kb])
    assert len(kb_view([kb])[1]) == 32  # .git, .env and the 30 new ones; the link is not masked


def test_a_kb_mentioning_a_load_in_a_comment_shows_only_its_own_file(tmp_path, kbcli):
    (tmp_path / "notes.txt").write_text("private notes")
    kb = tmp_path / "kb.pl"
    kb.write_text("% one day: :- ensure_loaded(helpers).\nslurp(F, S) :- read_file_to_string(F, S, []).\n")
    results, done = _answers(kbcli, kb, f"slurp('{tmp_path}/notes.txt', S)", "--allow", "read_file_to_string/3")
    assert results[0]["status"] != "proved" and "private" not in done.stdout, done


def test_the_answering_engine_writes_nowhere_so_no_goal_leaves_a_file_for_the_next(tmp_path, kbcli):
    kb = tmp_path / "kb.pl"
    kb.write_text("save(F) :- open(F, write, S), write(S, from_goal_1), close(S).\n"
                  "load(F, T) :- read_file_to_string(F, T, []).\n")
    allowed = [arg for name in ("open/3", "write/2", "close/1", "read_file_to_string/3") for arg in ("--allow", name)]
    done = kbcli("kb", "prove", str(kb), "save('/tmp/left')", "save(left)", "load('/tmp/left', T)", "load(left, T)",
                 "--format", "json", *allowed)
    results = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["status"] for r in results] == ["unknown", "unknown", "unknown", "unknown"], done
