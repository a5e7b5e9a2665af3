"""docs/kb.md's table of what a KB rule may do on a goal's behalf, run as it stands: each row's rule
goes into one KB, each goal is proved through `kb prove`, and its verdict is the row's ("as plain swipl"
rows against plain swipl on the same KB)."""

import json
import re

from tests.conftest import ROOT
from tests.kb.oracle import STATUS, swipl_says

# What the rows' goals lean on and the page leaves unsaid.
SUPPORT = """\
parent(tom, bob).
loop(N) :- N1 is N + 1, loop(N1).
fact(0).
:- table q/1.
q(a).
"""


def rows():
    """(clauses, goal, verdict) per row of the table under "What a KB rule may do"; an empty rule cell
    continues the row above."""
    text = (ROOT / "docs" / "kb.md").read_text()
    table = text[text.index("| KB rule | goal | verdict |"):].split("\n\n")[0].splitlines()[2:]
    found, clauses = [], []
    for line in table:
        rule, goal, verdict = (cell.strip() for cell in line.strip().strip("|").split("|"))
        if rule:
            clauses = [code for code in re.findall(r"`([^`]+)`", rule) if code.endswith(".")]
        found.append((clauses, re.fullmatch(r"`(.+)`", goal).group(1), verdict))
    return found


def test_every_row_of_the_kb_rule_table_holds(kbcli, tmp_path):
    table = rows()
    assert len(table) >= 12
    rules = [clause for clauses, _, _ in table for clause in clauses]
    kb = tmp_path / "table.pl"
    kb.write_text("\n".join(dict.fromkeys(rules)) + "\n" + SUPPORT)
    goals = [goal for _, goal, _ in table]
    done = kbcli("kb", "prove", str(kb), *goals, "--format", "json", "--time", "2", "--inferences", "200000")
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(replies) == len(goals), done.stderr
    for (_, goal, verdict), reply in zip(table, replies, strict=True):
        if verdict.startswith("as plain swipl"):
            assert reply["status"] == STATUS[swipl_says(kb, goal)], (goal, reply)
        else:
            assert reply["status"] == verdict.split(":")[0], (goal, verdict, reply)
        # An unknown for the reason the row gives: the layer that refused, or a limit.
        for said, reason in (("whitelist", "refused by the whitelist"), ("library(sandbox)", "refused by library(sandbox)"),
                             ("limit", "limit")):
            if said in verdict:
                assert reason in reply["reason"], (goal, verdict, reply)
