"""Chain of thought with self-consistency (`baseline --num-samples K`, `--method cot-sc`) through the CLI
against the scripted server: K requests per problem, each reply read by read_answer, and the answer their
majority, checked against the rule written out (Counter.most_common over the samples that named an option,
in sample order); a sample that failed or named nothing is left out, and a problem none answers is a
typed error, never a guess."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from logicpipe.data.methods import shipped
from logicpipe.stages.replies import read_answer
from logicpipe.testing import FakeOpenAI, Fault
from tests.conftest import cli

IDS = ["FOLIO_dev_0", "FOLIO_dev_1", "FOLIO_dev_2"]  # gold C, A, B; options A) True, B) False, C) Uncertain
OPTIONS = ["A) True", "B) False", "C) Uncertain"]
NOTHING = "I cannot tell from the premises."
FAILED = "<HTTP 400>"  # the sample's request fails (a 400: no retry)
REPLIES = {  # problem -> each sample's reply, by sample index
    # a tie, A 2 and C 2: A, seen first, wins (the gold answer is C)
    "FOLIO_dev_0": ["Step by step.\nThe correct option is: A", "The answer is (C).", "Thus, the answer is (C) Uncertain.",
                    "Answer: A", "The answer is B because the premises rule out A."],
    # a failed request and a reply naming nothing are left out: A once, B once, A once -> A
    "FOLIO_dev_1": [FAILED, NOTHING, "The correct option is: A", "B) False", "Final answer: option A"],
    # no sample names an option: no answer
    "FOLIO_dev_2": [NOTHING, "The correct option is: A or B", FAILED, "", "Answer: E"],
}


def replies(scripted: dict[str, list[str]]):
    def reply(body: dict) -> str:
        meta = body["_logicpipe"]
        assert meta["purpose"] == "cot", meta
        return scripted[meta["problem"]][int(meta["sample"])]
    return reply


def failing(scripted: dict[str, list[str]]):
    def fault(body: dict) -> Fault | None:
        meta = body["_logicpipe"]
        return Fault(status=400) if scripted[meta["problem"]][int(meta["sample"])] == FAILED else None
    return fault


def oracle(texts: list[str]) -> str | None:
    """The rule written out: Counter.most_common over the options the samples named, in sample order."""
    named = [read_answer(text, OPTIONS).letter for text in texts if text != FAILED]
    counts = Counter(letter for letter in named if letter is not None)
    return counts.most_common(1)[0][0] if counts else None


def baseline(fake, data_dir, out, *extra: str):
    return cli("baseline", "--mode", "cot", "-d", "folio", "--limit", "3", "--data-dir", str(data_dir),
               "--out", str(out), "--model", "fake-gpt", "--base-url", fake.url, "--llm-cache", str(out / "cache.sqlite"),
               "--max-retries", "0", "--max-errors", "10", *extra)


def answers(out, folder="baseline-cot"):
    path = out / folder / "folio" / "interpret.jsonl"
    return {r["id"]: r for r in map(json.loads, path.read_text().splitlines())}


def served(scripted: dict[str, list[str]]) -> FakeOpenAI:
    fake = FakeOpenAI(replies(scripted))
    fake.fault_for = failing(scripted)
    return fake


def test_five_samples_a_problem_and_their_majority(data_dir, tmp_path):
    with served(REPLIES) as fake:
        done = baseline(fake, data_dir, tmp_path, "--num-samples", "5", "--temperature", "0.7")
        assert done.returncode == 0, done.stderr
        sent = list(fake.requests)
        again = baseline(fake, data_dir, tmp_path, "--num-samples", "5", "--temperature", "0.7")
        assert again.returncode == 0, again.stderr
        assert len(fake.requests) == len(sent)  # a rerun sends nothing
    assert Counter(body["_logicpipe"]["problem"] for body in sent) == {pid: 5 for pid in IDS}
    for pid in IDS:
        assert sorted(int(b["_logicpipe"]["sample"]) for b in sent if b["_logicpipe"]["problem"] == pid) == [0, 1, 2, 3, 4]
        assert {b["temperature"] for b in sent} == {0.7}
    got = answers(tmp_path)
    for pid in IDS:
        assert got[pid]["final"] == got[pid]["predicted"] == oracle(REPLIES[pid]), pid
        assert len(got[pid]["votes"]) == 5
    assert got["FOLIO_dev_0"]["final"] == "A"  # the tie goes to the option seen first, not to the gold C
    votes = got["FOLIO_dev_1"]["votes"]
    assert [v["answer"] for v in votes] == [None, None, "A", "B", "A"]
    assert votes[0]["error"]["category"] == "llm" and votes[1]["error"]["category"] == "no_answer"
    # no sample answered: a typed error, and no guess
    assert got["FOLIO_dev_2"]["final"] is None and got["FOLIO_dev_2"]["error"]["category"] == "no_answer"
    assert "none of the 5 samples named an option" in got["FOLIO_dev_2"]["error"]["message"]
    # usage: every sample that was answered (four of five for two problems), in one record
    assert [got[pid]["usage"]["calls"] for pid in IDS] == [5, 5, 5]
    assert got["FOLIO_dev_0"]["usage"]["completion_tokens"] == sum(len(t) // 4 for t in REPLIES["FOLIO_dev_0"])
    metrics = json.loads((tmp_path / "baseline-cot" / "folio" / "metrics.json").read_text())
    assert (metrics["total"], metrics["executed"], metrics["correct"]) == (3, 2, 1)
    assert metrics["tokens"]["calls"] == 15
    identity = json.loads((tmp_path / "baseline-cot" / "folio" / "run.json").read_text())
    assert identity["stages"]["cot"]["num_samples"] == 5
    # `failures` and the viewer's data show the votes
    listed = cli("failures", str(tmp_path))
    assert listed.returncode == 0 and "FOLIO_dev_2" in listed.stdout and "no_answer" in listed.stdout
    from logicpipe.report.viewer.failures import failed_problems
    (row,) = failed_problems(tmp_path)
    assert "(no_answer, no_answer, llm, no_answer, no_answer)" in row["message"]
    from logicpipe.report.viewer.run import _problem
    from logicpipe.stages.store import read_recorded
    recorded = read_recorded(tmp_path / "baseline-cot" / "folio", [])
    shown = {t.id: _problem("folio", t, {}) for t in recorded.trajectories}
    assert shown["FOLIO_dev_1"]["votes"] == ["llm", "no_answer", "A", "B", "A"]
    told = cli("explain", str(tmp_path), "--id", "FOLIO_dev_1", "--data-dir", str(data_dir))
    assert told.returncode == 0, told.stderr
    assert "votes of 5 samples: llm, no_answer, A, B, A (A 2, B 1;" in told.stdout
    assert "gold: A   predicted: A" in told.stdout and "sample 0: llm: HTTP 400" in told.stdout
    told = cli("explain", str(tmp_path), "--id", "FOLIO_dev_2", "--data-dir", str(data_dir))
    assert told.returncode == 0 and "no answer: no_answer: none of the 5 samples named an option" in told.stdout


def test_a_wrong_sample_turns_the_vote(data_dir, tmp_path):
    # FOLIO_dev_1's decisive sample (its second A, which breaks the A-B tie) says B instead: B wins 2 to 1.
    flipped = {**REPLIES, "FOLIO_dev_1": [*REPLIES["FOLIO_dev_1"][:4], "Final answer: option B"]}
    with served(flipped) as fake:
        done = baseline(fake, data_dir, tmp_path, "--num-samples", "5", "--temperature", "0.7")
        assert done.returncode == 0, done.stderr
    got = answers(tmp_path)
    assert got["FOLIO_dev_1"]["final"] == "B" == oracle(flipped["FOLIO_dev_1"])
    metrics = json.loads((tmp_path / "baseline-cot" / "folio" / "metrics.json").read_text())
    assert metrics["correct"] == 0  # FOLIO_dev_1's gold is A


def test_one_sample_is_the_plain_baseline_and_folders_do_not_mix(data_dir, tmp_path):
    plain = {pid: texts[2:3] for pid, texts in REPLIES.items()}
    with served(plain) as fake:
        done = baseline(fake, data_dir, tmp_path)
        assert done.returncode == 0, done.stderr
        assert len(fake.requests) == 3 and all(b["_logicpipe"]["sample"] == "0" for b in fake.requests)
        mixed = baseline(fake, data_dir, tmp_path, "--num-samples", "5", "--temperature", "0.7")
        assert mixed.returncode != 0 and "num_samples" in mixed.stderr, mixed.stderr
        assert len(fake.requests) == 3
    got = answers(tmp_path)
    assert all("votes" not in record for record in got.values())  # as records written before samples existed
    identity = json.loads((tmp_path / "baseline-cot" / "folio" / "run.json").read_text())
    assert "num_samples" not in identity["stages"]["cot"]
    bad = cli("baseline", "--mode", "cot", "-d", "folio", "--num-samples", "3", "--model", "m",
              "--data-dir", str(data_dir), "--out", str(tmp_path / "bad"))
    assert bad.returncode == 2 and "temperature" in bad.stderr and not (tmp_path / "bad").exists()


def test_epochs_with_samples(data_dir, tmp_path):
    with served(REPLIES) as fake:
        done = baseline(fake, data_dir, tmp_path, "--num-samples", "5", "--temperature", "0.7", "--epochs", "2")
        assert done.returncode == 0, done.stderr
        sent = list(fake.requests)
    assert len(sent) == 30  # 3 problems, 5 samples, 2 epochs: each its own request
    assert len({json.dumps({**b, "_logicpipe": b["_logicpipe"]["sample"]}, sort_keys=True) for b in sent}) == 30
    assert sorted(str(b.get("seed")) for b in sent) == ["2"] * 15 + ["None"] * 15
    for folder in (tmp_path / "baseline-cot", tmp_path / "epoch-2" / "baseline-cot"):
        got = {r["id"]: r for r in map(json.loads, (folder / "folio" / "interpret.jsonl").read_text().splitlines())}
        assert [got[pid]["final"] for pid in IDS] == ["A", "A", None]
    summary = json.loads((tmp_path / "baseline-cot" / "epochs-folio.json").read_text())
    assert summary["epochs"] == 2 and summary["accuracy_by_epoch"] == [33.33, 33.33]


def test_method_cot_sc_samples_forty_at_its_temperature(data_dir, tmp_path):
    scripted = {pid: [texts[i % 5] for i in range(40)] for pid, texts in REPLIES.items()}
    with served(scripted) as fake:
        done = cli("baseline", "--method", "cot-sc", "-d", "folio", "--limit", "3", "--data-dir", str(data_dir),
                   "--out", str(tmp_path), "--model", "fake-gpt", "--base-url", fake.url, "--max-retries", "0",
                   "--max-errors", "100", "--llm-cache", str(tmp_path / "cache.sqlite"))
        assert done.returncode == 0, done.stderr
        assert len(fake.requests) == 120 and {b["temperature"] for b in fake.requests} == {0.7}
    got = answers(tmp_path, "baseline-cot-sc")
    assert [got[pid]["final"] for pid in IDS] == [oracle(scripted[pid]) for pid in IDS] == ["A", "A", None]
    refused = cli("baseline", "--method", "cot-sc", "--num-samples", "5", "--temperature", "0.7", "-d", "folio",
                  "--model", "m", "--data-dir", str(data_dir), "--out", str(tmp_path / "no"))
    assert refused.returncode != 0 and "--method cot-sc sets --num-samples 40" in refused.stderr


def test_the_spending_cap_counts_each_sample_and_never_votes_on_part_of_them(data_dir, tmp_path):
    with served(REPLIES) as fake:
        probe = baseline(fake, data_dir, tmp_path / "probe", "--num-samples", "5", "--temperature", "0.7")
        assert probe.returncode == 0, probe.stderr
        spent = json.loads((tmp_path / "probe" / "baseline-cot" / "folio" / "metrics.json").read_text())["tokens"]
        per_request = (spent["prompt_tokens"] + spent["completion_tokens"]) / 15
        fake.requests.clear()
        # room for about seven of the fifteen requests: the first problem's five, part of the second's
        capped = baseline(fake, data_dir, tmp_path / "capped", "--num-samples", "5", "--temperature", "0.7",
                          "--max-concurrency", "1", "--max-tokens-total", str(int(per_request * 6.5)))
        assert capped.returncode != 0 and "--max-tokens-total" in capped.stderr, capped.stderr
        first = len(fake.requests)
        assert 5 < first < 10
        # a failed request is not cached: the rerun asks it again
        again = sum(REPLIES[b["_logicpipe"]["problem"]][int(b["_logicpipe"]["sample"])] == FAILED for b in fake.requests)
        kept = answers(tmp_path / "capped")
        assert list(kept) == ["FOLIO_dev_0"] and len(kept["FOLIO_dev_0"]["votes"]) == 5
        done = baseline(fake, data_dir, tmp_path / "capped", "--num-samples", "5", "--temperature", "0.7")
        assert done.returncode == 0, done.stderr
        assert len(fake.requests) == 15 + again  # the replies got before the cap came from the cache
    finished, whole = answers(tmp_path / "capped"), answers(tmp_path / "probe")
    assert {pid: r["votes"] for pid, r in finished.items()} == {pid: r["votes"] for pid, r in whole.items()}


def test_a_spec_file_of_its_own_with_epochs(data_dir, tmp_path):
    mine = {**shipped()["cot-sc"].model_dump(), "name": "mine", "samples": 3, "temperature": 0.5}
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(mine))
    scripted = {pid: texts[2:5] for pid, texts in REPLIES.items()}
    with served(scripted) as fake:
        done = cli("baseline", "--method", str(path), "-d", "folio", "--limit", "3", "--data-dir", str(data_dir),
                   "--out", str(tmp_path / "out"), "--model", "fake-gpt", "--base-url", fake.url, "--epochs", "2",
                   "--max-retries", "0", "--max-errors", "10", "--llm-cache", str(tmp_path / "cache.sqlite"))
        assert done.returncode == 0, done.stderr
        assert len(fake.requests) == 18 and {b["temperature"] for b in fake.requests} == {0.5}
    summary = json.loads((tmp_path / "out" / "baseline-mine" / "epochs-folio.json").read_text())
    assert summary["folders"] == [str(tmp_path / "out" / "baseline-mine" / "folio"),
                                  str(tmp_path / "out" / "epoch-2" / "baseline-mine" / "folio")]
    expected = [oracle(scripted[pid]) for pid in IDS]
    for folder in summary["folders"]:
        got = {r["id"]: r["final"] for r in map(json.loads, (Path(folder) / "interpret.jsonl").read_text().splitlines())}
        assert [got[pid] for pid in IDS] == expected


def test_a_problem_whose_samples_failed_for_a_passing_reason_is_asked_again(data_dir, tmp_path):
    with served(REPLIES) as fake:
        # FOLIO_dev_2's failed sample is a 500 (transient: given up on after --max-retries 0), not a 400
        fake.fault_for = lambda body: Fault(status=500) if (body["_logicpipe"]["problem"], body["_logicpipe"]["sample"]) \
            == ("FOLIO_dev_2", "2") else None
        done = baseline(fake, data_dir, tmp_path, "--num-samples", "5", "--temperature", "0.7")
        assert done.returncode == 0, done.stderr
        error = answers(tmp_path)["FOLIO_dev_2"]["error"]
        assert error["category"] == "llm" and error["transient"] is True
        fake.fault_for = None
        fake.requests.clear()
        again = baseline(fake, data_dir, tmp_path, "--num-samples", "5", "--temperature", "0.7")
        assert again.returncode == 0, again.stderr
        # only the failed sample is sent: the problem's four other replies come from the cache
        assert [(b["_logicpipe"]["problem"], b["_logicpipe"]["sample"]) for b in fake.requests] == [("FOLIO_dev_2", "2")]
    got = answers(tmp_path)["FOLIO_dev_2"]
    assert got["error"]["category"] == "no_answer" and got["final"] is None and len(got["votes"]) == 5


def test_samples_through_a_provider_batch(data_dir, tmp_path):
    # --batch: each sample is a line of the batch (its custom_id names the sample), voted as when sent alone
    scripted = {pid: [text for text in texts if text != FAILED][:3] for pid, texts in REPLIES.items()}
    with FakeOpenAI(replies(scripted), batch_delay=0.2) as fake:
        done = baseline(fake, data_dir, tmp_path, "--num-samples", "3", "--temperature", "0.7", "--batch",
                        "--batch-poll", "0.1")
        assert done.returncode == 0, done.stderr
        assert [len(batch["lines"]) for batch in fake.batches] == [9] and not fake.requests
    got = answers(tmp_path)
    assert [[vote["answer"] for vote in got[pid]["votes"]] for pid in IDS] == [["A", "C", "C"], [None, "A", "B"],
                                                                             [None, None, None]]
    assert [got[pid]["final"] for pid in IDS] == [oracle(scripted[pid]) for pid in IDS] == ["C", "A", None]
