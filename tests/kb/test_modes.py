"""kb ask, validate and add through the CLI against the local OpenAI-compatible test server."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from logicpipe.testing import FakeOpenAI
from tests.conftest import ROOT

EXAMPLE = ROOT / "examples" / "kb"
CAMPUS = EXAMPLE / "campus.pl"
QUESTIONS = {q["id"]: q for q in map(json.loads, (EXAMPLE / "questions.jsonl").read_text().splitlines())}
NOW = ["--percepts", str(EXAMPLE / "now.txt")]


def as_set(bindings):
    return sorted(json.dumps(b, sort_keys=True) for b in bindings)


def goals_reply(question_id):
    goals = QUESTIONS[question_id.split("-")[0]]["goals"]
    return "```prolog\n" + "\n".join(goals) + "\n```" if goals else "UNANSWERABLE"


CLAIMS = {
    "a1": [{"claim": "Alice got a distinction in cs101", "goal": "distinction(alice, cs101)"},
           {"claim": "Turing teaches Alice", "goal": "taught_by(alice, turing)"},
           {"claim": "Alice owns a car", "goal": None}],
    "a2": [{"claim": "Bob can take cs101", "goal": "eligible(bob, cs101)"},
           {"claim": "Bob can take math201", "goal": "eligible(bob, math201)"}],
    "a3": [{"claim": "Hopper teaches cs301", "goal": "teaches(hopper, cs301)"},
           {"claim": "The pool is open", "goal": "open_now(pool)"}],
    "a4": [{"claim": "It is fine", "goal": "shell('touch {marker}')"},
           {"claim": "Erin is a student", "goal": "student(erin)"}],
}


def replies(marker=None):
    def reply(body):
        meta = body["_logicpipe"]
        purpose, problem = meta["purpose"], meta["problem"]
        if purpose == "kb-goals":
            return goals_reply(problem)
        if purpose == "kb-context":
            return f"CONTEXT FOR {problem}"
        if purpose == "kb-answer":
            return f"ANSWER FOR {problem}"
        if purpose == "kb-claims":
            claims = [dict(c, goal=c["goal"] and c["goal"].format(marker=marker)) for c in CLAIMS[problem]]
            return "Here are the claims:\n" + json.dumps(claims)
        return "unexpected"
    return reply


def model_args(server, tmp_path):
    return ["--model", "fake", "--base-url", server.url, "--llm-cache", str(tmp_path / "cache.sqlite")]


def test_ask_batch_on_the_example_kb(kbcli, tmp_path):
    questions = tmp_path / "questions.jsonl"
    questions.write_text((EXAMPLE / "questions.jsonl").read_text())
    out = tmp_path / "ask"
    with FakeOpenAI(replies()) as server:
        done = kbcli("kb", "ask", str(CAMPUS), "--questions", str(questions), "--out", str(out), *NOW,
                   *model_args(server, tmp_path), timeout=120)
        assert done.returncode == 0, done.stderr
        purposes = [(r["_logicpipe"]["purpose"], r["_logicpipe"]["problem"]) for r in server.requests]
    records = {r["id"]: r for r in map(json.loads, (out / "ask.jsonl").read_text().splitlines())}
    assert sorted(records) == sorted(QUESTIONS)
    for qid, expected in QUESTIONS.items():
        record = records[qid]
        if not expected["goals"]:
            assert record["addressed"] is False and record["answer"].startswith("The knowledge base cannot")
            assert ("kb-answer", qid) not in purposes  # nothing for the model to make up
            continue
        first = record["results"][0]
        unique = []
        for solution in first["solutions"]:
            if solution["bindings"] not in unique:
                unique.append(solution["bindings"])
        # SWI-Prolog's solution set (order aside: a tabled predicate's answers come in no fixed order)
        assert first["proved"] == expected["proved"] and as_set(unique) == as_set(expected["bindings"]), qid
        assert record["answer"] == f"ANSWER FOR {qid}" and record["addressed"] is True
        assert record["usage"]["calls"] == 2
    assert "derives requires(cs401, cs101)" in records["q01"]["context"]
    assert "cannot derive can_borrow(bob, B)" in records["q06"]["context"]
    assert "the proof fails at: \\+overdue(taocp, bob)" in records["q06"]["context"]
    assert "because facility(pool, outdoor); p_weather(sunny) (current value)" in records["q05"]["context"]
    tree = records["q05"]["results"][0]["solutions"][0]["tree"]
    assert [c["goal"] for c in tree["children"]] == ["p_hour(11)", "hours(pool, 9, 18)", "11>=9", "11<18",
                                                    "weather_ok(pool)"]
    assert tree["children"][0]["clause"] == "percept"


def test_ask_one_question_with_model_context_and_unsafe_goal(kbcli, tmp_path):
    marker = tmp_path / "marker"

    def reply(body):
        purpose = body["_logicpipe"]["purpose"]
        if purpose == "kb-goals":
            return f"```prolog\nstudent(alice).\nshell('touch {marker}').\n```"
        return replies()(body)

    with FakeOpenAI(reply) as server:
        done = kbcli("kb", "ask", str(CAMPUS), "Is Alice a student?", "--context", "model", "-f", "json",
                   *model_args(server, tmp_path), timeout=60)
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["goals"] == ["student(alice)", "shell('touch " + str(marker) + "')"]
    assert len(record["results"]) == 1 and record["results"][0]["proved"]
    assert "shell/1 is neither a predicate of the KB" in record["rejected"][0]
    assert record["context"] == "CONTEXT FOR cli" and record["answer"] == "ANSWER FOR cli"
    assert not marker.exists()


def test_validate_batch_gives_one_verdict_per_claim(kbcli, tmp_path):
    marker = tmp_path / "marker"
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps({"id": key, "answer": f"answer {key}"}) + "\n" for key in CLAIMS))
    out = tmp_path / "validate"
    with FakeOpenAI(replies(marker)) as server:
        done = kbcli("kb", "validate", str(CAMPUS), "--answers", str(answers), "--out", str(out), *NOW,
                   *model_args(server, tmp_path), timeout=120)
    assert done.returncode == 0, done.stderr
    records = {r["id"]: r for r in map(json.loads, (out / "validate.jsonl").read_text().splitlines())}
    verdicts = {key: [c["verdict"] for c in r["claims"]] for key, r in records.items()}
    assert verdicts == {"a1": ["true", "true", "untranslatable"], "a2": ["true", "true"],
                        "a3": ["not derivable", "true"], "a4": ["untranslatable", "true"]}
    assert {key: r["valid"] for key, r in records.items()} == {"a1": False, "a2": True, "a3": False, "a4": False}
    proof = records["a1"]["claims"][1]["proof"]
    assert proof["goal"] == "taught_by(alice, turing)" and proof["clause"].endswith("campus.pl:104")
    assert "false, or missing from the KB" in records["a3"]["claims"][0]["reason"]
    assert not marker.exists()


def test_validate_one_answer_exits_1_when_invalid(kbcli, tmp_path):
    def reply(body):
        return json.dumps(CLAIMS["a3"])

    with FakeOpenAI(reply) as server:
        done = kbcli("kb", "validate", str(CAMPUS), "--answer", "Hopper teaches cs301 and the pool is open.",
                   *NOW, *model_args(server, tmp_path), timeout=60)
    assert done.returncode == 1
    assert "[not derivable] Hopper teaches cs301" in done.stdout and "valid: no" in done.stdout


@pytest.mark.slow
def test_batch_of_100_killed_and_resumed_loses_and_duplicates_nothing(tmp_path):
    questions = tmp_path / "questions.jsonl"
    ids = [f"{qid}-{n:03d}" for n, qid in zip(range(100), list(QUESTIONS) * 9)]
    questions.write_text("".join(json.dumps({"id": i, "question": f"question {i}"}) + "\n" for i in ids))
    out = tmp_path / "ask"
    with FakeOpenAI(replies(), latency=0.05) as server:
        args = [sys.executable, "-m", "logicpipe", "kb", "ask", str(CAMPUS), "--questions", str(questions),
                "--out", str(out), "--max-concurrency", "4", *NOW, *model_args(server, tmp_path)]
        process = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   env=dict(os.environ))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (not (out / "ask.jsonl").exists()
                                               or (out / "ask.jsonl").read_text().count("\n") < 15):
            time.sleep(0.05)
        process.send_signal(signal.SIGKILL)
        process.wait()
        before = (out / "ask.jsonl").read_text().count("\n")
        assert 15 <= before < 100
        done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in (out / "ask.jsonl").read_text().splitlines()]
    assert [r["id"] for r in records] == ids  # in input order, each once
    assert all(r["answer"] == f"ANSWER FOR {r['id']}" or not r["addressed"] for r in records)
    assert f"100 records ({100 - before} new, 0 with errors)" in done.stderr


def test_usage_errors_are_one_line(kbcli, tmp_path):
    questions = tmp_path / "q.jsonl"
    questions.write_text('{"id": "a", "question": "x"}\n{"id": "a", "question": "y"}\n')
    common = ["--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--llm-cache", str(tmp_path / "c.sqlite")]
    both = kbcli("kb", "ask", str(CAMPUS), "Who?", "--questions", str(questions), "--out", "o.jsonl", *common)
    assert both.returncode == 2 and "not both" in both.stderr
    no_out = kbcli("kb", "validate", str(CAMPUS), "--answers", str(questions), *common)
    assert no_out.returncode == 2 and "--out is required" in no_out.stderr
    duplicate = kbcli("kb", "ask", str(CAMPUS), "--questions", str(questions), "--out", str(tmp_path / "o"), *common)
    assert duplicate.returncode == 2 and f"{questions}:2: duplicate id 'a'" in duplicate.stderr
    # The model options are checked as `run` checks them (one options model), before anything is written.
    good = tmp_path / "good.jsonl"
    good.write_text('{"id": "a", "question": "x"}\n')
    url = kbcli("kb", "ask", str(CAMPUS), "--questions", str(good), "--out", str(tmp_path / "u"), "--model", "m",
                "--base-url", "ftp://x")
    assert url.returncode == 2 and url.stderr.startswith("error: invalid option --base-url: 'ftp://x' is not")
    blocker = tmp_path / "file"
    blocker.write_text("")
    answers = tmp_path / "answers.jsonl"
    answers.write_text('{"id": "a", "answer": "x"}\n')
    cache = kbcli("kb", "validate", str(CAMPUS), "--answers", str(answers), "--out", str(tmp_path / "v"), "--model",
                  "m", "--llm-cache", str(blocker / "c.sqlite"))
    assert cache.returncode == 2 and "invalid option --llm-cache" in cache.stderr, cache.stderr
    assert not (tmp_path / "u").exists() and not (tmp_path / "v").exists()
    one = kbcli("kb", "ask", str(CAMPUS), "Who?", "--model", "m", "--llm-cache", str(blocker / "c.sqlite"))
    assert one.returncode == 2 and one.stderr.startswith("error: invalid option --llm-cache:"), one.stderr
    missing = kbcli("kb", "validate", str(CAMPUS), "--answers", str(tmp_path / "none.jsonl"), "--out",
                    str(tmp_path / "w"), "--model", "m")
    assert missing.returncode == 2 and missing.stderr == f"error: {tmp_path / 'none.jsonl'}: no such file\n"
    assert not (tmp_path / "w").exists()


def test_a_batch_record_may_carry_its_own_percepts(kbcli, tmp_path):
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"id": "q05-now", "question": "Is the pool open?"}) + "\n"
                         + json.dumps({"id": "q05-storm", "question": "Is the pool open?",
                                       "percepts": {"p_weather": "storm", "p_hour": 12}}) + "\n")
    out = tmp_path / "ask"
    with FakeOpenAI(replies()) as server:
        done = kbcli("kb", "ask", str(CAMPUS), "--questions", str(questions), "--out", str(out), *NOW,
                     *model_args(server, tmp_path))
    assert done.returncode == 0, done.stderr
    records = {r["id"]: r for r in map(json.loads, (out / "ask.jsonl").read_text().splitlines())}
    assert records["q05-now"]["results"][0]["proved"] is True
    storm = records["q05-storm"]
    assert storm["results"][0]["proved"] is False
    assert storm["percepts"][-2:] == ["p_weather = storm", "p_hour = 12"]
    assert "\\+bad_weather(storm) (negation as failure: the negated goal holds)" in storm["context"]


def test_validate_of_an_unreadable_reply_is_unknown_not_invalid(kbcli, tmp_path):
    # The model's reply holds no claims: nothing was checked, which is no verdict on the answer.
    with FakeOpenAI(lambda body: "I cannot split this answer into claims.") as server:
        done = kbcli("kb", "validate", str(CAMPUS), "--answer", "Hopper teaches cs301.", *NOW,
                     *model_args(server, tmp_path), timeout=60)
    assert done.returncode == 3, done.stderr
    assert done.stdout.strip() == ("valid: unknown (no claim was checked: the reply is not a JSON list of "
                                   '{"claim": ..., "goal": ...} objects)')
