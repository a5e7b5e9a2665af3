"""--refine semantic (Logic-LM++) through the real CLI against a local OpenAI-compatible server: a revision
replaces a program only if it wins the pairwise comparison; otherwise the run backtracks to the program."""

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from logicpipe.report.viewer import failed_problems
from logicpipe.report.viewer.run import load_run
from logicpipe.stages.compare import order, parse_winner
from logicpipe.testing import FakeOpenAI, Fault
from tests.conftest import ROOT, cli

LD = "LogicalDeduction_dev_gpt-4.json"


def records(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def by_id(path):
    return {r["id"]: r for r in records(path)}


def one_line(done):
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode != 0 and len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    return lines[0]


class Scenario:
    """Five problems, one per path through a semantic round. The model writes, per problem:
    0: a wrong program (answers A); its revision is the released one, which wins, and then revises to itself.
    1: the released program; its revision is wrong (answers B) and loses: the run backtracks.
    2: the released program; its revision does not parse, so it loses without a comparison.
    3: the released program; a reworded revision, and a comparison reply that names no winner.
    4: a program that does not parse; error refinement repairs it first, then it is revised (to itself).
    The comparison prefers whichever program is the released one, wherever it is shown."""

    def __init__(self, data_dir):
        source = json.loads((data_dir / "programs" / LD).read_text())[:5]
        self.ids = [r["id"] for r in source]
        self.gold = {r["id"]: r["answer"] for r in source}
        good = [r["raw_logic_programs"][0].strip() + "\n" for r in source]
        self.good = good
        wrong0 = good[0].replace("purple_book == 2", "green_book == 2", 1)
        wrong1 = good[1].replace("convertible == 2", "sedan == 2", 1)
        reworded = good[3].replace(":::", "::: as stated,", 1)
        broken = good[4].replace("Constraints:", "Constraints:\n@@@ broken line", 1)
        assert len({wrong0, good[0]}) == len({wrong1, good[1]}) == len({reworded, good[3]}) == 2
        self.formulate = dict(zip(self.ids, [wrong0, good[1], good[2], good[3], broken]))
        self.revise = {wrong0: good[0], good[0]: good[0], good[1]: wrong1, good[2]: "Variables:\nnonsense\n",
                       good[3]: reworded, good[4]: good[4]}
        self.repair = {broken: good[4]}
        self.release = threading.Event()
        self.release.set()
        self.hold = None  # a problem whose comparison waits for `release`

    def __call__(self, body):
        meta = body["_logicpipe"]
        purpose, problem, user = meta["purpose"], meta["problem"], body["messages"][-1]["content"]
        if purpose == "formulate":
            return f"```\n{self.formulate[problem]}```"
        if purpose in ("revise", "refine"):
            table = self.revise if purpose == "revise" else self.repair
            found = [revised for program, revised in table.items() if f"Program:\n{program}" in user]
            return f"Here it is.\n```\n{found[0]}```" if found else "No idea."
        if purpose == "compare":
            if problem == self.hold:
                self.release.wait(60)
            if problem == self.ids[3]:
                return "Both programs state the problem equally well."
            index = self.ids.index(problem)
            letter = "A" if user.index("Program A:") < user.index(self.good[index]) < user.index("Program B:") else "B"
            return f"Program {letter} keeps every constraint.\nWinner: {letter}"
        return "unexpected"


def semantic_run(fake, data_dir, out, *extra):
    return cli("run", "-d", "logicaldeduction", "--data-dir", str(data_dir), "--out", str(out), "--model", "m",
               "--base-url", fake.url, "--llm-timeout", "20", "--max-retries", "0", "--limit", "5",
               "--backup", "none", "--refine", "semantic", *extra)


def purposes(requests):
    return [(r["_logicpipe"]["purpose"], r["_logicpipe"]["problem"]) for r in requests]


def check_outcomes(scenario, stage_dir):
    """What every problem ends as, whether the run went through at once or was killed and resumed."""
    p = scenario.ids
    first = by_id(stage_dir / "compare-1.jsonl")
    assert sorted(first) == sorted(p[:4])  # the repair of problem 4 needs no decision
    assert first[p[0]]["revised"] and first[p[0]]["outcome"] == "won"
    assert first[p[0]]["order"] == order(p[0], 1) and first[p[0]]["winner"] == "AB"[order(p[0], 1).index("revision")]
    assert first[p[0]]["reply"].endswith(f"Winner: {first[p[0]]['winner']}") and first[p[0]]["usage"]["calls"] == 1
    assert not first[p[1]]["revised"] and first[p[1]]["outcome"] == "lost"
    assert first[p[1]]["winner"] == "AB"[order(p[1], 1).index("program")]
    assert not first[p[2]]["revised"] and first[p[2]]["outcome"] == "not_executed"
    assert first[p[2]]["note"].startswith("parse: ") and first[p[2]]["order"] is None
    assert not first[p[3]]["revised"] and first[p[3]]["outcome"] == "no_winner"
    assert first[p[3]]["error"]["category"] == "no_answer" and "names no winner" in first[p[3]]["error"]["message"]
    refined = by_id(stage_dir / "refine-1.jsonl")
    assert [refined[i]["source"] for i in p] == ["revise:m"] * 4 + ["refine:m"]
    solved = by_id(stage_dir / "solve-1.jsonl")
    assert solved[p[0]]["verdict"] == scenario.gold[p[0]] and solved[p[1]]["verdict"] == "B"
    # Round 2: only the revision that won and the repaired program are revised again, each to itself.
    second = by_id(stage_dir / "compare-2.jsonl")
    assert {i: (r["outcome"], r["revised"]) for i, r in second.items()} == {p[0]: ("unchanged", False),
                                                                         p[4]: ("unchanged", False)}
    assert not (stage_dir / "refine-3.jsonl").exists()
    answers = by_id(stage_dir / "interpret.jsonl")
    assert {i: (r["final"], r["round"]) for i, r in answers.items()} == {
        p[0]: (scenario.gold[p[0]], 1),  # the winning revision's answer
        p[1]: (scenario.gold[p[1]], 0), p[2]: (scenario.gold[p[2]], 0), p[3]: (scenario.gold[p[3]], 0),  # backtracked
        p[4]: (scenario.gold[p[4]], 1)}  # the repair stands
    metrics = json.loads((stage_dir / "metrics.json").read_text())
    assert metrics["accuracy"] == 100.0 and metrics["refinement_rounds"] == 2
    assert metrics["revisions"] == {"decided": 6, "revised": 1, "lost": 1, "no_winner": 1, "not_executed": 1,
                                    "unchanged": 2, "won": 1}
    identity = json.loads((stage_dir / "run.json").read_text())["stages"]["refine"]
    assert identity["mode"] == "semantic" and set(identity["prompts"]) >= {"revise", "compare"}


def test_a_revision_replaces_the_program_only_if_it_wins(data_dir, tmp_path):
    scenario = Scenario(data_dir)
    p, stage_dir = scenario.ids, tmp_path / "logicaldeduction"
    with FakeOpenAI(scenario) as fake:
        done = semantic_run(fake, data_dir, tmp_path)
        assert done.returncode == 0, done.stderr
        sent = purposes(fake.requests)
        check_outcomes(scenario, stage_dir)
        # No comparison for the revision that did not parse, nor for a revision that changed nothing.
        assert sorted(i for purpose, i in sent if purpose == "compare") == sorted([p[0], p[1], p[3]])
        assert sorted(i for purpose, i in sent if purpose == "revise") == sorted([*p[:4], p[0], p[4]])
        assert [i for purpose, i in sent if purpose == "refine"] == [p[4]]
        # The viewer shows each round's decision next to its program.
        shown = {problem["id"]: problem["rounds"] for problem in load_run(tmp_path, data_dir).problems}
        assert shown[p[1]][1]["details"]["compare.outcome"] == "lost"
        assert shown[p[3]][1]["details"]["compare.error"]["category"] == "no_answer"
        assert "compare.outcome" not in shown[p[4]][1]["details"]
        # Every problem ended right: the revision of p[2] that did not parse was rejected, so it is no failure.
        assert failed_problems(tmp_path) == []
        assert cli("failures", str(tmp_path)).stdout.split()[:3] == ["0", "failed", "problems"]
        # Rerunning the finished run asks nothing and rewrites nothing.
        before = {f.name: f.read_bytes() for f in stage_dir.iterdir()}
        fake.requests.clear()
        again = semantic_run(fake, data_dir, tmp_path)
        assert again.returncode == 0, again.stderr
        assert fake.requests == []
    assert {f.name: f.read_bytes() for f in stage_dir.iterdir()} == before


def test_method_logic_lm_pp_is_this_refinement_end_to_end(data_dir, tmp_path):
    """`--method logic-lm-pp` sets semantic refinement (3 rounds) and Logic-LM's random backup: the same
    decisions, the wrong revision of the second problem rejected and its program kept."""
    scenario = Scenario(data_dir)
    with FakeOpenAI(scenario) as fake:
        done = cli("run", "--method", "logic-lm-pp", "-d", "logicaldeduction", "--data-dir", str(data_dir), "--out",
                   str(tmp_path), "--model", "m", "--base-url", fake.url, "--llm-timeout", "20", "--max-retries", "0",
                   "--limit", "5")
        assert done.returncode == 0, done.stderr
    check_outcomes(scenario, tmp_path / "logicaldeduction")
    recorded = json.loads((tmp_path / "logicaldeduction" / "run.json").read_text())
    assert recorded["method"] == "logic-lm-pp" and recorded["stages"]["refine"]["max_rounds"] == 3
    assert recorded["stages"]["interpret"]["backup"] == "random"


@pytest.mark.slow  # kill-and-resume is also covered by tests/test_cli.py
def test_a_run_killed_during_a_comparison_resumes_without_redoing_anything_recorded(data_dir, tmp_path):
    scenario = Scenario(data_dir)
    p = scenario.ids
    scenario.hold = p[1]
    scenario.release.clear()
    stage_dir = tmp_path / "logicaldeduction"
    with FakeOpenAI(scenario) as fake:
        args = ["run", "-d", "logicaldeduction", "--data-dir", str(data_dir), "--out", str(tmp_path), "--model", "m",
                "--base-url", fake.url, "--llm-timeout", "60", "--max-retries", "0", "--limit", "5",
                "--backup", "none", "--refine", "semantic", "--max-concurrency", "1"]
        process = subprocess.Popen([sys.executable, "-m", "logicpipe", *args], cwd=ROOT, env=dict(os.environ),
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        compared = stage_dir / "compare-1.jsonl"

        def waiting() -> bool:  # the first comparison's decision is written and the second comparison hangs
            return ("compare", p[1]) in purposes(fake.requests) and compared.exists() and p[0] in compared.read_text()

        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not waiting():
            time.sleep(0.02)
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate(timeout=60)
        scenario.release.set()
        first = purposes(fake.requests)
        assert ("compare", p[3]) not in first, first
        # Killed: the round's programs and solver results are on disk, its decisions only in part.
        assert sorted(by_id(stage_dir / "solve-1.jsonl")) == sorted(p)
        assert sorted(by_id(compared)) == [p[0], p[2]]  # p[2]'s revision did not parse: decided without asking
        fake.requests.clear()
        done = subprocess.run([sys.executable, "-m", "logicpipe", *args], cwd=ROOT, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        resumed = purposes(fake.requests)
    # Only what was not recorded: the comparisons still owed, then round 2.
    assert not [i for purpose, i in resumed if purpose in ("formulate", "refine")]
    assert sorted(i for purpose, i in resumed if purpose == "compare") == sorted([p[1], p[3]])
    assert sorted(i for purpose, i in resumed if purpose == "revise") == sorted([p[0], p[4]])  # round 2 only
    check_outcomes(scenario, stage_dir)


@pytest.mark.slow  # two runs against a faulty server
def test_a_comparison_that_fails_for_now_keeps_the_program_and_is_asked_again_next_run(data_dir, tmp_path):
    scenario = Scenario(data_dir)
    p, stage_dir = scenario.ids, tmp_path / "logicaldeduction"
    with FakeOpenAI(scenario) as fake:
        # One request at a time: 5 formulate and 5 round-1 requests, then the first comparison (problem 0's) fails.
        fake.inject(*[Fault()] * 10, Fault(status=503))
        done = semantic_run(fake, data_dir, tmp_path, "--max-concurrency", "1")
        assert done.returncode == 0, done.stderr
        assert purposes(fake.requests)[10] == ("compare", p[0])
        failed = by_id(stage_dir / "compare-1.jsonl")[p[0]]
        assert (failed["revised"], failed["outcome"], failed["error"]["category"], failed["error"]["transient"]) == (
            False, "no_winner", "llm", True)
        assert by_id(stage_dir / "interpret.jsonl")[p[0]]["round"] == 0  # kept the (wrong) program for now
        assert p[0] not in by_id(stage_dir / "refine-2.jsonl")
        fake.requests.clear()
        again = semantic_run(fake, data_dir, tmp_path, "--max-concurrency", "1")
        assert again.returncode == 0, again.stderr
        assert purposes(fake.requests) == [("compare", p[0]), ("revise", p[0])]
    check_outcomes(scenario, stage_dir)


def test_semantic_refinement_needs_a_model_and_rounds_and_is_part_of_the_identity(data_dir, tmp_path):
    out = tmp_path / "out"
    base = ["run", "-d", "logicaldeduction", "--data-dir", str(data_dir), "--out", str(out), "--limit", "1"]
    line = one_line(cli(*base, "--model", "m", "--refine", "semantic", "--max-rounds", "0"))
    assert "--refine semantic needs --max-rounds of at least 1" in line
    replay = [*base, "--programs", str(data_dir / "programs" / LD)]
    assert "--refine semantic needs a model" in one_line(cli(*replay, "--refine", "semantic"))
    assert "invalid option --refine" in one_line(cli(*replay, "--refine", "meaning"))
    assert not out.exists()
    scenario = Scenario(data_dir)
    with FakeOpenAI(scenario) as fake:
        model = ["--model", "m", "--base-url", fake.url, "--max-retries", "0", "--backup", "none"]
        assert cli(*base, *model).returncode == 0  # error refinement: run.json as before, no mode recorded
        identity = json.loads((out / "logicaldeduction" / "run.json").read_text())["stages"]["refine"]
        assert "mode" not in identity and set(identity["prompts"]) == {"refine", "guide-csp"}
        assert "refine.mode" in one_line(cli(*base, *model, "--refine", "semantic"))
        assert not (out / "logicaldeduction" / "compare-1.jsonl").exists()


@pytest.mark.parametrize(("reply", "winner"), [
    ("Winner: A", "A"), ("B", "B"), ("**Winner: Program B**", "B"), ("(a)", "A"),
    ("A is closer.\nWinner: B", "B"), ("Winner: A\nOn reflection:\nWinner: B", None),
    ("Both are fine.", None), ("Winner: A because it keeps the constraint", None), ("", None), ("AB", None)])
def test_only_a_reply_that_names_one_winner_counts(reply, winner):
    assert parse_winner(reply) == winner


def test_the_order_shown_is_seeded_per_problem_and_round_and_takes_both_sides():
    orders = {tuple(order(f"p{i}", 1)) for i in range(20)}
    assert orders == {("program", "revision"), ("revision", "program")}
    assert all(order(f"p{i}", r) == order(f"p{i}", r) for i in range(5) for r in range(1, 4))
