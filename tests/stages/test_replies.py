"""Model replies read faithfully, through the CLI against the scripted server: a reply with no program is
no_program (at formulate for every formalism, and in refinement, where it leaves the standing program);
no refinement round repeats an earlier round's request; baseline answers are read as docs/baselines.md
says; explain names the backup that answered."""

import json
import re
from pathlib import Path

import pytest

from logicpipe.core.records import text_sha
from logicpipe.stages.replies import read_answer, read_program
from logicpipe.testing import FakeOpenAI
from tests.conftest import ROOT, cli

FILES = {"prontoqa": "ProntoQA_dev_gpt-4.json", "folio": "FOLIO_dev_gpt-4.json",
         "logicaldeduction": "LogicalDeduction_dev_gpt-4.json", "ar-lsat": "AR-LSAT_dev_gpt-4.json"}
SOLVERS = {"prontoqa": "lp", "folio": "fol", "logicaldeduction": "csp", "ar-lsat": "smt"}
FOLIO_OPTIONS = ["A) True", "B) False", "C) Uncertain"]


def by_id(path: Path) -> dict[str, dict]:
    return {r["id"]: r for r in (json.loads(line) for line in path.read_text().splitlines())}


def released(data_dir: Path, dataset: str) -> list[dict]:
    return json.loads((data_dir / "programs" / FILES[dataset]).read_text())


def llm_run(fake, data_dir, out, dataset, *extra):
    return cli("run", "-d", dataset, "--data-dir", str(data_dir), "--out", str(out), "--model", "fake-gpt",
               "--base-url", fake.url, "--llm-timeout", "5", *extra)


def sent(fake, purpose: str, problem: str) -> list[list[dict]]:
    return [r["messages"] for r in fake.requests
            if (r["_logicpipe"]["purpose"], r["_logicpipe"]["problem"]) == (purpose, problem)]


NO_PROGRAM_REPLIES = ["", "  \n\t \n", "I cannot translate this problem into a program.", "Sure!\n```\n\n```"]


@pytest.mark.parametrize("dataset", list(SOLVERS))
def test_a_formulate_reply_without_a_program_is_no_program_for_every_formalism(dataset, data_dir, tmp_path):
    ids = [r["id"] for r in released(data_dir, dataset)][:len(NO_PROGRAM_REPLIES)]
    replies = dict(zip(ids, NO_PROGRAM_REPLIES))
    with FakeOpenAI(lambda body: replies.get(body["_logicpipe"]["problem"], "")) as fake:
        done = llm_run(fake, data_dir, tmp_path, dataset, "--limit", str(len(ids)), "--max-rounds", "2")
        assert done.returncode == 0, done.stderr
        purposes = [r["_logicpipe"]["purpose"] for r in fake.requests]
    assert purposes == ["formulate"] * len(ids)  # nothing was sent to refinement
    stage_dir = tmp_path / dataset
    formulated, solved = by_id(stage_dir / "formulate.jsonl"), by_id(stage_dir / "solve.jsonl")
    interpreted = by_id(stage_dir / "interpret.jsonl")
    for pid, reply in replies.items():
        record = formulated[pid]
        assert record["program"] is None and record["samples"] == []
        assert record["error"]["category"] == "no_program" and record["reply"] == reply
        assert solved[pid]["error"]["category"] == "no_program" and solved[pid]["verdict"] is None
        assert interpreted[pid]["executed"] is False and interpreted[pid]["backup"] == "random"
    assert json.loads((stage_dir / "metrics.json").read_text())["failures"] == {"no_program": len(ids)}


def test_read_program_finds_every_released_program(data_dir):
    """Logic-LM's released programs are programs, save the two that hold none: an empty one (AR-LSAT)
    and one English sentence (FOLIO), both text-davinci-003's."""
    names = {"AR-LSAT": "smt", "FOLIO": "fol", "LogicalDeduction": "csp", "ProntoQA": "lp", "ProofWriter": "lp"}
    missing, total = [], 0
    for path in sorted((data_dir / "programs").glob("*.json")):
        for record in json.loads(path.read_text()):
            for text in record.get("raw_logic_programs", [])[:1]:
                total += 1
                if read_program(text, names[path.name.split("_")[0]]) is None:
                    missing.append((path.name, text[:30]))
    assert total > 3600
    assert missing == [("AR-LSAT_dev_text-davinci-003.json", ""),
                       ("FOLIO_dev_text-davinci-003.json", "Based on the above information")]


class Repairs:
    """Two broken programs. The first is answered with prose, then (asked again) with its repair; the
    second only ever with prose."""

    PROSE = "I cannot repair this program."

    def __init__(self, data_dir):
        source = released(data_dir, "logicaldeduction")[:2]
        self.ids = [r["id"] for r in source]
        self.good = {r["id"]: r["raw_logic_programs"][0] for r in source}
        self.broken = {pid: text.replace("Constraints:", "Constraints:\n@@@ broken line", 1)
                       for pid, text in self.good.items()}
        self.asked: dict[str, int] = {}

    def __call__(self, body):
        meta = body["_logicpipe"]
        problem = meta["problem"]
        if meta["purpose"] == "formulate":
            return self.broken[problem]
        self.asked[problem] = self.asked.get(problem, 0) + 1
        if problem == self.ids[0] and self.asked[problem] == 2:
            return f"Here it is.\n```\n{self.good[problem]}```"
        return self.PROSE


def test_a_refinement_reply_without_a_program_keeps_the_program_and_no_request_repeats(data_dir, tmp_path):
    script = Repairs(data_dir)
    fixed, stuck = script.ids
    with FakeOpenAI(script) as fake:
        done = llm_run(fake, data_dir, tmp_path, "logicaldeduction", "--limit", "2", "--max-rounds", "3")
        assert done.returncode == 0, done.stderr
        asked = {pid: sent(fake, "refine", pid) for pid in script.ids}
        count = len(fake.requests)
        # A rerun finds every record in place (the no_program ones included) and asks nothing.
        again = llm_run(fake, data_dir, tmp_path, "logicaldeduction", "--limit", "2", "--max-rounds", "3")
        assert again.returncode == 0, again.stderr
        assert len(fake.requests) == count
    stage_dir = tmp_path / "logicaldeduction"
    first = by_id(stage_dir / "solve.jsonl")
    assert {first[pid]["error"]["category"] for pid in script.ids} == {"parse"}
    for pid in script.ids:
        # Both rounds repaired the standing (broken) program; the second said the first got no program.
        assert len(asked[pid]) == 2 and asked[pid][0] != asked[pid][1]
        assert all(f"Program:\n{script.broken[pid].strip()}" in m[-1]["content"] for m in asked[pid])
        assert "previous reply held no program" not in asked[pid][0][-1]["content"]
        assert "previous reply held no program" in asked[pid][1][-1]["content"]
        assert first[pid]["error"]["message"] in asked[pid][1][-1]["content"]
    round1, solved1 = by_id(stage_dir / "refine-1.jsonl"), by_id(stage_dir / "solve-1.jsonl")
    formulated = by_id(stage_dir / "formulate.jsonl")
    for pid in script.ids:
        assert round1[pid]["program"] is None and round1[pid]["reply"] == Repairs.PROSE
        assert round1[pid]["error"]["category"] == "no_program"
        assert solved1[pid]["error"]["category"] == "no_program"
    round2, solved2 = by_id(stage_dir / "refine-2.jsonl"), by_id(stage_dir / "solve-2.jsonl")
    assert round2[fixed]["program"] == script.good[fixed].strip() + "\n" and solved2[fixed]["error"] is None
    assert round2[stuck]["error"]["category"] == "no_program"
    assert round1[stuck]["parent"] == round2[stuck]["parent"] == text_sha(formulated[stuck]["program"])
    # Round 3 would have sent the stuck problem's round-2 request again: it stopped instead.
    assert not (stage_dir / "refine-3.jsonl").exists()
    shown = " ".join(done.stdout.split())  # as rich wraps it at 80 columns
    assert "refine-3: 1 problem stops refining, as the next request would repeat an earlier round's" in shown
    interpreted = by_id(stage_dir / "interpret.jsonl")
    assert interpreted[fixed]["executed"] is True and interpreted[fixed]["round"] == 2
    # The error that stands is the broken program's own, not one about the prose.
    assert interpreted[stuck]["error"] == first[stuck]["error"] and interpreted[stuck]["round"] == 0


def answer_table() -> list[tuple[str, str]]:
    """The table of replies in docs/baselines.md: (reply, how it is read)."""
    rows = []
    for line in (ROOT / "docs" / "baselines.md").read_text().splitlines():
        row = re.match(r"^\| (?:`(.*)`|\(empty\)) \| (.+) \|$", line)
        if row is not None:
            rows.append(((row.group(1) or "").replace("\\n", "\n"), row.group(2)))
    return rows


def check(reading, expected: str) -> None:
    if expected.startswith("no_answer: "):
        assert reading.letter is None and expected.removeprefix("no_answer: ") in (reading.reason or "")
    else:
        assert (reading.letter, reading.reason) == (expected, None)


@pytest.mark.parametrize(("reply", "expected"), answer_table())
def test_the_documented_answer_table(reply, expected):
    check(read_answer(reply, FOLIO_OPTIONS), expected)


def test_baseline_reads_the_answer_forms_models_write(data_dir, tmp_path):
    table = answer_table()
    assert len(table) >= 25 and any(e.startswith("no_answer") for _, e in table)
    ids = [r["id"] for r in released(data_dir, "folio")][:len(table)]
    replies = dict(zip(ids, (reply for reply, _ in table)))
    with FakeOpenAI(lambda body: replies[body["_logicpipe"]["problem"]]) as fake:
        done = cli("baseline", "--mode", "standard", "-d", "folio", "--limit", str(len(ids)), "--data-dir",
                   str(data_dir), "--out", str(tmp_path), "--model", "fake-gpt", "--base-url", fake.url)
        assert done.returncode == 0, done.stderr
        assert len(fake.requests) == len(ids)
    stage_dir = tmp_path / "baseline-standard" / "folio"
    answers, scored = by_id(stage_dir / "interpret.jsonl"), by_id(stage_dir / "evaluate.jsonl")
    for pid, (_, expected) in zip(ids, table):
        answer = answers[pid]
        if expected.startswith("no_answer: "):
            assert answer["final"] is None and answer["error"]["category"] == "no_answer"
            assert expected.removeprefix("no_answer: ") in answer["error"]["message"]
        else:
            assert answer["final"] == expected and answer["error"] is None
    metrics = json.loads((stage_dir / "metrics.json").read_text())
    right = sum(scored[pid]["correct"] for pid in ids)
    assert right == sum(expected == scored[pid]["gold"] for pid, (_, expected) in zip(ids, table)) > 0
    answered = sum(not e.startswith("no_answer") for _, e in table)
    assert metrics["correct"] == right and metrics["failures"] == {"no_answer": len(ids) - answered}
    # The summary speaks of answers: no Exe_Rate, no backup.
    shown = " ".join(done.stdout.split())  # as rich wraps it at 80 columns
    assert "Standard baseline" in shown and "answered" in shown and "replies without an answer" in shown
    assert "Exe_Rate" not in shown and "backup" not in shown


def test_explain_names_the_backup_that_answered(data_dir, tmp_path):
    source = released(data_dir, "logicaldeduction")[:3]
    cot_answer, no_answer, solved = (r["id"] for r in source)
    replies = {("cot", cot_answer): "Thinking it through.\nThe correct option is: B",
               ("cot", no_answer): "I am not sure which one it is.",
               ("formulate", solved): source[2]["raw_logic_programs"][0]}

    def reply(body):
        meta = body["_logicpipe"]
        return replies.get((meta["purpose"], meta["problem"]), "I cannot translate this problem.")

    with FakeOpenAI(reply) as fake:
        done = llm_run(fake, data_dir, tmp_path, "logicaldeduction", "--limit", "3", "--backup", "cot",
                       "--max-rounds", "0")
        assert done.returncode == 0, done.stderr
    interpreted = by_id(tmp_path / "logicaldeduction" / "interpret.jsonl")
    assert interpreted[cot_answer]["backup"] == "cot" and interpreted[cot_answer]["final"] == "B"
    assert interpreted[no_answer]["backup"] == "cot, then random"
    assert interpreted[no_answer]["backup_error"]["category"] == "no_answer"

    def explained(pid: str) -> str:
        shown = cli("explain", str(tmp_path), "--id", pid, "--data-dir", str(data_dir))
        assert shown.returncode == 0, shown.stderr
        return next(line for line in shown.stdout.splitlines() if line.startswith("gold: "))

    assert "(backup answer: the chain-of-thought backup, as the program did not execute)" in explained(cot_answer)
    assert ("(backup answer: a random letter, as the program did not execute and the chain-of-thought backup "
            "gave no answer)") in explained(no_answer)
    assert "backup" not in explained(solved)
