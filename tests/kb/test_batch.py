"""kb batches on the run machinery, through the CLI against the scripted server: lock, run.json identity,
error budget, one typed record per input, PromptSet templates, percepts in the model's context."""

import json
import os
import signal
import subprocess
import sys
import time

from logicpipe.runtime.folder import RUN_FILE, DirectoryLock
from logicpipe.testing import FakeOpenAI
from logicpipe.testing.server import Fault
from tests.conftest import ROOT
from tests.kb.test_modes import CAMPUS, NOW, model_args, replies


def write_questions(path, ids, question="Who teaches cs101?"):
    path.write_text("".join(json.dumps({"id": i, "question": f"{question} ({i})"}) + "\n" for i in ids))
    return path


def records(folder, stage="ask"):
    return [json.loads(line) for line in (folder / f"{stage}.jsonl").read_text().splitlines()]


def test_a_killed_batch_resumes_without_losing_or_repeating_a_record(tmp_path):
    ids = [f"q01-{n}" for n in range(8)]
    questions = write_questions(tmp_path / "q.jsonl", ids)
    out = tmp_path / "run"
    with FakeOpenAI(replies(), latency=0.15) as server:
        args = [sys.executable, "-m", "logicpipe", "kb", "ask", str(CAMPUS), "--questions", str(questions),
                "--out", str(out), "--max-concurrency", "1", *NOW, *model_args(server, tmp_path)]
        process = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   env=dict(os.environ))
        stage = out / "ask.jsonl"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (not stage.exists() or stage.read_text().count("\n") < 2):
            time.sleep(0.02)
        process.send_signal(signal.SIGKILL)
        process.wait()
        before = stage.read_text().count("\n")
        assert 2 <= before < len(ids)
        done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert [r["id"] for r in records(out)] == ids  # each once, in input order
    assert all(r["answer"] == f"ANSWER FOR {r['id']}" and r["error"] is None for r in records(out))
    assert f"{out}: 8 records ({8 - before} new, 0 with errors)" in done.stderr
    identity = json.loads((out / RUN_FILE).read_text())
    assert identity["kb"] == "campus.pl" and identity["inputs"] == "q.jsonl"
    assert identity["stages"]["ask"]["model"] == "fake" and identity["stages"]["ask"]["context"] == "template"
    assert set(identity["stages"]["ask"]["prompts"]) == {"kb-goals", "kb-answer"}


def test_a_resume_with_other_options_or_another_kb_is_refused_naming_the_fields(kbcli, tmp_path):
    kb = tmp_path / "campus.pl"
    kb.write_text(CAMPUS.read_text())
    questions = write_questions(tmp_path / "q.jsonl", ["q01-a", "q01-b"])
    out = tmp_path / "run"
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    (prompts / "kb-answer.txt").write_text("Answer in one word.\n=== user ===\n{{context}}\nQ: {{question}}\n")
    base = ["kb", "ask", str(kb), "--questions", str(questions), "--out", str(out), *NOW]
    with FakeOpenAI(replies()) as server:
        model = model_args(server, tmp_path)
        assert kbcli(*base, *model).returncode == 0
        written = (out / "ask.jsonl").read_text()
        other = kbcli(*base, *model, "--temperature", "0.5", "--prompts", str(prompts), "--depth", "50")
        assert other.returncode == 2
        assert other.stderr == (f"error: {out} was made with other options (ask.limits, ask.prompts, "
                                "ask.temperature differ); re-run with the same options to resume, or pass "
                                "--overwrite to start afresh\n")
        kb.write_text(kb.read_text() + "student(zoe).\n")
        edited = kbcli(*base, *model)
        assert edited.returncode == 2 and "(kb_sha256 differ)" in edited.stderr
        assert (out / "ask.jsonl").read_text() == written  # a refused run writes nothing
        again = kbcli(*base, *model, "--prompts", str(prompts), "--overwrite")
        assert again.returncode == 0, again.stderr
        sent = [r["messages"] for r in server.requests if r["_logicpipe"]["purpose"] == "kb-answer"]
    assert sent[-1][0]["content"] == "Answer in one word."
    identity = json.loads((out / RUN_FILE).read_text())
    assert identity["stages"]["ask"]["prompts"]["kb-answer"] != json.loads(json.dumps(identity))["kb_sha256"][:12]
    assert len(records(out)) == 2


def test_the_error_budget_stops_a_batch_with_exit_4_and_a_resume_finishes_it(kbcli, tmp_path):
    ids = [f"q01-{n}" for n in range(4)]
    questions = write_questions(tmp_path / "q.jsonl", ids)
    out = tmp_path / "run"
    args = ["kb", "ask", str(CAMPUS), "--questions", str(questions), "--out", str(out), "--max-errors", "1",
            "--max-concurrency", "1", *NOW]
    with FakeOpenAI(replies()) as server:
        server.inject(Fault(status=400), Fault(status=400))
        stopped = kbcli(*args, *model_args(server, tmp_path))
        assert stopped.returncode == 4
        assert "stopped after 2 model errors, over the budget of 1 (--max-errors)" in stopped.stderr
        kept = records(out)
        assert [r["error"]["category"] for r in kept] == ["llm", "llm"]  # written before the stop
        resumed = kbcli(*args, *model_args(server, tmp_path))
    assert resumed.returncode == 0, resumed.stderr
    assert sorted(r["id"] for r in records(out)) == ids
    assert f"{out}: 4 records (2 new, 2 with errors); error rate 50.00% [15.0, 85.0] (95% Wilson interval, n=4)" \
        in resumed.stderr  # statsmodels' proportion_confint(2, 4, method="wilson"): 0.1500, 0.8500


def test_a_fatal_model_error_stops_at_once_and_its_record_is_redone(kbcli, tmp_path):
    questions = write_questions(tmp_path / "q.jsonl", ["q01-a", "q01-b"])
    out = tmp_path / "run"
    args = ["kb", "ask", str(CAMPUS), "--questions", str(questions), "--out", str(out), "--max-concurrency", "1",
            *NOW]
    with FakeOpenAI(replies()) as server:
        server.inject(Fault(status=401))
        stopped = kbcli(*args, *model_args(server, tmp_path))
        assert stopped.returncode == 4 and "first fatal model error" in stopped.stderr
        assert not (out / "ask.jsonl").exists() or records(out) == []
        resumed = kbcli(*args, *model_args(server, tmp_path))
    assert resumed.returncode == 0
    assert [r["error"] for r in records(out)] == [None, None]


def test_a_bad_reply_is_an_error_record_and_the_batch_goes_on(kbcli, tmp_path):
    answers = tmp_path / "a.jsonl"
    answers.write_text("".join(json.dumps({"id": key, "answer": f"answer {key}"}) + "\n"
                               for key in ("a1", "bad", "a2")))
    out = tmp_path / "run"

    def reply(body):
        if body["_logicpipe"]["problem"] == "bad":
            return "I would rather not split this answer."
        return replies()(body)

    with FakeOpenAI(reply) as server:
        done = kbcli("kb", "validate", str(CAMPUS), "--answers", str(answers), "--out", str(out), *NOW,
                     *model_args(server, tmp_path))
    assert done.returncode == 0, done.stderr
    got = {r["id"]: r for r in records(out, "validate")}
    assert [r["id"] for r in records(out, "validate")] == ["a1", "bad", "a2"]
    assert got["bad"]["error"] == {"category": "parse", "transient": False,
                                   "message": 'the reply is not a JSON list of {"claim": ..., "goal": ...} objects'}
    assert got["a2"]["valid"] is True and got["a1"]["error"] is None
    assert "3 records (3 new, 1 with errors)" in done.stderr


def test_a_goal_nested_too_deeply_costs_only_its_own_record(kbcli, tmp_path):
    questions = write_questions(tmp_path / "q.jsonl", ["deep", "q01-a"])
    out = tmp_path / "run"
    deep = "student(" * 3000 + "x" + ")" * 3000

    def reply(body):
        if body["_logicpipe"]["problem"] == "deep" and body["_logicpipe"]["purpose"] == "kb-goals":
            return f"```prolog\n{deep}.\n```"
        return replies()(body)

    with FakeOpenAI(reply) as server:
        done = kbcli("kb", "ask", str(CAMPUS), "--questions", str(questions), "--out", str(out), *NOW,
                     *model_args(server, tmp_path))
    assert done.returncode == 0, done.stderr
    got = records(out)
    assert [r["id"] for r in got] == ["deep", "q01-a"]
    assert got[0]["error"] is not None or got[0]["rejected"] or got[0]["results"]  # a record, whatever it says
    assert got[1]["answer"] == "ANSWER FOR q01-a"


def test_percept_values_reach_the_model_that_answers(kbcli, tmp_path):
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"id": "q05-storm", "question": "Is the pool open?",
                                     "percepts": {"p_weather": "storm"}}) + "\n")
    out = tmp_path / "run"
    for mode in ("template", "model"):
        with FakeOpenAI(replies()) as server:
            done = kbcli("kb", "ask", str(CAMPUS), "--questions", str(questions), "--out", str(out / mode), *NOW,
                         "--context", mode, *model_args(server, tmp_path))
            assert done.returncode == 0, done.stderr
            sent = {r["_logicpipe"]["purpose"]: r["messages"][-1]["content"] for r in server.requests}
        now = "Current values: p_weather = sunny; p_hour = 11; p_day = 12; p_weather = storm."
        assert now in sent["kb-answer"], mode
        if mode == "model":
            assert '"p_weather = storm"' in sent["kb-context"]
        assert records(out / mode)[0]["context"].startswith(now)


def test_a_second_batch_on_a_held_folder_and_a_file_as_out_are_refused(kbcli, tmp_path):
    questions = write_questions(tmp_path / "q.jsonl", ["q01-a"])
    out = tmp_path / "run"
    common = ["--model", "m", "--base-url", "http://127.0.0.1:9/v1", *NOW]
    with DirectoryLock(out):
        held = kbcli("kb", "ask", str(CAMPUS), "--questions", str(questions), "--out", str(out), *common)
    assert held.returncode == 2 and "is in use by another logicpipe run" in held.stderr
    file = tmp_path / "ask.jsonl"
    file.write_text("")
    as_file = kbcli("kb", "ask", str(CAMPUS), "--questions", str(questions), "--out", str(file), *common)
    assert as_file.returncode == 2
    assert as_file.stderr == f"error: --out {file} is a file; a batch writes a run folder (run.json and its records)\n"
    single = kbcli("kb", "validate", str(CAMPUS), "--answer", "Bob is a student.", "--out", str(out), *common)
    assert single.returncode == 2
    assert single.stderr == "error: --out is for a batch (a JSONL file of answers); one answer is printed\n"
    bad_budget = kbcli("kb", "ask", str(CAMPUS), "--questions", str(questions), "--out", str(out),
                       "--max-errors", "lots", *common)
    assert bad_budget.returncode == 2
    assert bad_budget.stderr == "error: --max-errors: give a count (5) or a percentage (10%)\n"


def test_a_claim_whose_search_hits_a_limit_is_unknown_never_not_derivable(kbcli, tmp_path):
    claims = [{"claim": "cs401 needs cs101", "goal": "requires(cs401, cs101)"},
              {"claim": "cs101 needs cs401", "goal": "requires(cs101, cs401)"}]
    with FakeOpenAI(lambda body: json.dumps(claims)) as server:
        limited = kbcli("kb", "validate", str(CAMPUS), "--answer", "cs401 needs cs101, not the reverse.",
                        "--inferences", "3", "-f", "json", *model_args(server, tmp_path))
        free = kbcli("kb", "validate", str(CAMPUS), "--answer", "cs401 needs cs101, not the reverse.",
                     "-f", "json", *model_args(server, tmp_path))
    assert limited.returncode == 1 and free.returncode == 1
    assert [c["verdict"] for c in json.loads(limited.stdout)["claims"]] == ["unknown", "unknown"]
    assert all(c["reason"] for c in json.loads(limited.stdout)["claims"])
    assert [c["verdict"] for c in json.loads(free.stdout)["claims"]] == ["true", "not derivable"]


def test_a_resume_redoes_only_the_inputs_whose_text_or_percepts_changed(kbcli, tmp_path):
    questions = tmp_path / "q.jsonl"
    lines = [{"id": "q05-a", "question": "Is the pool open?"}, {"id": "q05-b", "question": "Is the pool open?"},
             {"id": "q05-c", "question": "Is the pool open?"}]
    questions.write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = tmp_path / "run"
    args = ["kb", "ask", str(CAMPUS), "--questions", str(questions), "--out", str(out), *NOW]
    with FakeOpenAI(replies()) as server:
        assert kbcli(*args, *model_args(server, tmp_path)).returncode == 0
        lines[1]["percepts"] = {"p_weather": "storm"}
        lines[2]["question"] = "Is the pool open now?"
        questions.write_text("".join(json.dumps(line) + "\n" for line in lines))
        again = kbcli(*args, *model_args(server, tmp_path))
    assert again.returncode == 0 and f"{out}: 3 records (2 new, 0 with errors)" in again.stderr
    got = records(out)
    assert [r["id"] for r in got] == ["q05-a", "q05-b", "q05-c"]
    assert got[1]["percepts"][-1] == "p_weather = storm" and got[1]["results"][0]["proved"] is False
    assert got[2]["question"] == "Is the pool open now?"
