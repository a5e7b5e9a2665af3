"""The template context `kb ask` gives a model ("G holds by file:line, because ..."), held against plain
swipl on the same KB: every goal it says holds is provable there, every goal it says does not hold or
fails is not, negations' failed searches included."""

import json
import re
import subprocess

from logicpipe.kb.render import context_sentences
from logicpipe.solvers.lp import swipl_path
from tests.conftest import ROOT, cli

CAMPUS = ROOT / "examples" / "kb" / "campus.pl"
GOALS = ["eligible(bob, C)", "eligible(bob, cs101)", "completed(bob, C)", "\\+ missing_prerequisite(ann, C)"]


def claims(sentences):
    """(goal, holds?) for each goal a sentence states to hold or not."""
    said = []
    for sentence in sentences:
        held = re.match(r"^(.*) holds by .*?, because (.*)\.$", sentence)
        failed = re.match(r"^(.*) does not hold: .*? needs (.*)\.$", sentence)
        head, parts = (held or failed).groups() if held or failed else (None, None)
        if head is None:
            continue
        said.append((head, held is not None))
        for part in parts.split("; "):
            part = part.removesuffix(" (current value)")
            said.append((part.removesuffix(" fails"), not part.endswith(" fails")))
    return said


def plain_swipl(goals):
    query = ", ".join(f"((({goal}) -> write(yes) ; write(no)), nl)" for goal in goals)
    done = subprocess.run([swipl_path(), "-q", "-g", f"consult('{CAMPUS}'), {query}", "-t", "halt"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return [line == "yes" for line in done.stdout.split()]


def test_what_the_context_says_holds_holds_in_plain_swipl():
    said = []
    for goal in GOALS:
        done = cli("kb", "prove", str(CAMPUS), goal, "--format", "json")
        said += claims(context_sentences(json.loads(done.stdout)))
    assert any(not holds for _, holds in said)  # negations' failed searches are among them
    assert plain_swipl([goal for goal, _ in said]) == [holds for _, holds in said], said
