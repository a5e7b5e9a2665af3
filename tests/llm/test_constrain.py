"""--constrain: the grammar travels with every formulate and refine request in the endpoint's own
field, the run records it in its identity, and an endpoint that refuses it stops the run."""

import json

from logicpipe.llm import Request, cache_key, request_body
from logicpipe.llm.constrain import grammar_for
from logicpipe.llm.declared import first_grammar, literal
from logicpipe.testing import FakeOpenAI, Fault, ScriptedReplies
from logicpipe.testing.server import declarations
from tests.conftest import cli

LD = "LogicalDeduction_dev_gpt-4.json"


def records(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def run(fake, data_dir, out, *extra):
    return cli("run", "-d", "logicaldeduction", "--data-dir", str(data_dir), "--out", str(out), "--model", "fake",
               "--base-url", fake.url, "--llm-timeout", "5", "--max-retries", "0", *extra)


def test_request_body_carries_the_grammar_in_the_endpoint_form():
    plain = Request("k", [{"role": "user", "content": "hi"}])
    assert "grammar" not in request_body("m", plain) and "guided_grammar" not in request_body("m", plain)
    gbnf = Request("k", plain.messages, grammar="root ::= \"a\"")
    assert request_body("m", gbnf)["grammar"] == "root ::= \"a\""
    vllm = Request("k", plain.messages, grammar="root ::= \"a\"", grammar_field="guided_grammar")
    body = request_body("m", vllm)
    assert body["guided_grammar"] == "root ::= \"a\"" and "grammar" not in body
    # A constrained reply is another reply: it is cached apart from the unconstrained one.
    assert len({cache_key("m", "u", r) for r in (plain, gbnf, vllm)}) == 3


def _broken_first(data_dir):
    """The released programs, the first problem's broken by a syntax error that a refine repairs."""
    replies = ScriptedReplies.from_logic_lm(data_dir / "programs" / LD)
    first = "logical_deduction_0"
    good = replies.programs[first][0]
    replies.programs[first] = [good.replace("Constraints:", "Constraints:\nBROKEN = = 1", 1)]
    replies.repairs = {"BROKEN = = 1": good}
    return replies


def test_constrained_run_sends_the_grammar_with_formulate_and_refine_requests(data_dir, tmp_path):
    """CSP is written in two phases (llm/declared.py): the declarations under the first grammar, then
    the whole program under a grammar that fixes the first reply as its start."""
    replies = _broken_first(data_dir)
    with FakeOpenAI(replies) as fake:
        done = run(fake, data_dir, tmp_path, "--limit", "3", "--constrain")
        assert done.returncode == 0, done.stderr
    sent = [(r["_logicpipe"]["purpose"], r["_logicpipe"]["phase"]) for r in fake.requests]
    assert sorted(sent) == [("formulate", "1")] * 3 + [("formulate", "2")] * 3 + [("refine", "1"), ("refine", "2")]
    first = first_grammar("csp", 2048)
    assert all(r["grammar"] == first and "guided_grammar" not in r
               for r in fake.requests if r["_logicpipe"]["phase"] == "1")
    for request in fake.requests:
        problem = request["_logicpipe"]["problem"]
        if request["_logicpipe"] == {"purpose": "formulate", "problem": problem, "phase": "2"}:
            prefix = declarations(replies.programs[problem][0])
            assert prefix.rstrip().endswith("Constraints:")
            assert f"root ::= {literal(prefix)} csp-rest\n" in request["grammar"]
    stage_dir = tmp_path / "logicaldeduction"
    refined = records(stage_dir / "refine-1.jsonl")
    assert refined[0]["id"] == "logical_deduction_0" and "BROKEN" not in refined[0]["program"]
    formulated = records(stage_dir / "formulate.jsonl")
    assert [r["program"].strip() for r in formulated[1:]] == [replies.programs[r["id"]][0].strip() for r in formulated[1:]]
    assert all(r["usage"]["calls"] == 1 for r in formulated)
    assert json.loads((stage_dir / "metrics.json").read_text())["total"] == 3
    identity = json.loads((stage_dir / "run.json").read_text())["stages"]
    for stage in ("formulate", "refine"):
        assert identity[stage]["constrain"] is True and identity[stage]["constrain_format"] == "gbnf"
        assert len(identity[stage]["grammar_sha256"]) == 64


def test_one_phase_languages_send_their_grammar_once(data_dir, tmp_path):
    programs = data_dir / "programs" / "ProntoQA_dev_gpt-4.json"
    with FakeOpenAI(ScriptedReplies.from_logic_lm(programs)) as fake:
        done = cli("run", "-d", "prontoqa", "--data-dir", str(data_dir), "--out", str(tmp_path), "--model", "fake",
                   "--base-url", fake.url, "--limit", "2", "--constrain")
        assert done.returncode == 0, done.stderr
    assert len(fake.requests) == 2
    assert all(r["grammar"] == grammar_for("lp", 2048) and r["_logicpipe"]["phase"] == "" for r in fake.requests)


def test_vllm_form_sends_guided_grammar(data_dir, tmp_path):
    with FakeOpenAI(ScriptedReplies.from_logic_lm(data_dir / "programs" / LD)) as fake:
        done = run(fake, data_dir, tmp_path, "--limit", "2", "--constrain", "--constrain-format", "vllm")
        assert done.returncode == 0, done.stderr
    assert len(fake.requests) == 4
    assert all("guided_grammar" in r and "grammar" not in r for r in fake.requests)
    assert [r["guided_grammar"] for r in fake.requests if r["_logicpipe"]["phase"] == "1"] == [first_grammar("csp", 2048)] * 2


def test_unconstrained_run_sends_no_grammar_and_cannot_resume_constrained(data_dir, tmp_path):
    with FakeOpenAI(ScriptedReplies.from_logic_lm(data_dir / "programs" / LD)) as fake:
        assert run(fake, data_dir, tmp_path, "--limit", "2").returncode == 0
        assert not any("grammar" in r or "guided_grammar" in r for r in fake.requests)
        again = run(fake, data_dir, tmp_path, "--limit", "2", "--constrain")
    assert again.returncode != 0
    assert "formulate.constrain" in again.stderr and "--overwrite" in again.stderr


def test_an_endpoint_refusing_the_grammar_stops_the_run_with_one_clear_line(data_dir, tmp_path):
    with FakeOpenAI(ScriptedReplies.from_logic_lm(data_dir / "programs" / LD)) as fake:
        fake.inject(Fault(status=400))
        done = run(fake, data_dir, tmp_path, "--limit", "5", "--max-concurrency", "1", "--max-errors", "100",
                   "--constrain")
        # The run stopped at the first refusal (one more request may already be in flight), and no
        # request went out without the grammar.
        assert len(fake.requests) <= 2 and all("grammar" in r for r in fake.requests)
    assert done.returncode == 4, done.stderr
    assert "--constrain" in done.stderr and "'grammar' field" in done.stderr and "HTTP 400" in done.stderr


def test_without_constrain_a_400_is_an_ordinary_model_error(data_dir, tmp_path):
    with FakeOpenAI(ScriptedReplies.from_logic_lm(data_dir / "programs" / LD)) as fake:
        fake.inject(Fault(status=400))
        done = run(fake, data_dir, tmp_path, "--limit", "3", "--max-concurrency", "1", "--max-errors", "2",
                   "--max-rounds", "0")
    assert done.returncode == 0, done.stderr
    assert "--constrain" not in done.stderr
