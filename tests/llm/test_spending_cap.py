"""--max-cost and --max-tokens-total on run, baseline and kb ask, through the CLI against the scripted
server: the run stops between requests with what arrived written and says what was left; a re-run
with a higher cap finishes it without asking the server anything twice (llm/budget.py Budget)."""

import json
from collections import Counter

from logicpipe.testing import FakeOpenAI, ScriptedReplies
from logicpipe.testing.server import Fault
from tests.conftest import cli
from tests.kb.test_batch import write_questions
from tests.kb.test_modes import CAMPUS, NOW, model_args, replies

PROGRAMS = "ProntoQA_dev_gpt-4.json"
PRICES = ["--price-prompt", "1", "--price-completion", "2"]  # per million tokens


def run(fake, data_dir, tmp_path, *extra, command="run"):
    return cli(command, "-d", "prontoqa", "--data-dir", str(data_dir), "--out", str(tmp_path / "out"),
               "--model", "fake-gpt", "--base-url", fake.url, "--llm-cache", str(tmp_path / "cache.sqlite"),
               "--max-rounds", "0", "--limit", "20", *extra) if command == "run" else \
        cli(command, "-d", "prontoqa", "--data-dir", str(data_dir), "--out", str(tmp_path / "out"),
            "--model", "fake-gpt", "--base-url", fake.url, "--llm-cache", str(tmp_path / "cache.sqlite"),
            "--limit", "20", *extra)


def lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def asked_once(fake):
    seen = Counter((r["_logicpipe"]["purpose"], r["_logicpipe"]["problem"], r["_logicpipe"]["phase"])
                   for r in fake.requests)
    return all(count == 1 for count in seen.values())


def test_run_stops_at_max_cost_and_a_rerun_with_a_higher_cap_finishes_it(data_dir, tmp_path):
    folder = tmp_path / "out" / "prontoqa"
    with FakeOpenAI(ScriptedReplies.from_logic_lm(data_dir / "programs" / PROGRAMS)) as fake:
        stopped = run(fake, data_dir, tmp_path, "--max-concurrency", "1", *PRICES, "--max-cost", "0.01")
        assert stopped.returncode == 4, stopped.stderr
        last = stopped.stderr.strip().splitlines()[-1]
        assert last.startswith("error: --max-cost 0.01 reached (spent 0.01"), last
        kept = lines(folder / "formulate.jsonl")
        assert 0 < len(kept) < 20 and all(r["error"] is None and r["program"] for r in kept)
        assert f"{20 - len(kept)} of 20 requests not sent; finished records are kept" in last
        spent = json.loads((folder / "spent.json").read_text())
        per_request = spent["cost"] / spent["sent"]
        # Stopped at the cap: it was reached, by less than one request more (one in flight at a time).
        assert 0.01 <= spent["cost"] < 0.01 + 2 * per_request
        assert spent["sent"] == len(kept) == len(fake.requests)
        # --overwrite starts the records afresh, not what was spent: the cap is still reached.
        fresh = run(fake, data_dir, tmp_path, "--max-concurrency", "1", *PRICES, "--max-cost", "0.01", "--overwrite")
        assert fresh.returncode == 4 and "--max-cost 0.01 reached" in fresh.stderr, fresh.stderr
        assert len(fake.requests) == len(kept)  # only the cache answered
        again = run(fake, data_dir, tmp_path, "--max-concurrency", "1", *PRICES, "--max-cost", "1")
        assert again.returncode == 0, again.stderr
        assert len(fake.requests) == 20 and asked_once(fake)  # nothing paid for twice
    assert [r["id"] for r in lines(folder / "formulate.jsonl")] == [f"ProntoQA_{i}" for i in range(1, 21)]
    assert json.loads((folder / "metrics.json").read_text())["total"] == 20
    assert json.loads((folder / "spent.json").read_text())["sent"] == 20  # the ledger spans both runs


def test_max_tokens_total_with_many_in_flight_stops_near_the_cap(data_dir, tmp_path):
    folder = tmp_path / "out" / "prontoqa"
    with FakeOpenAI(ScriptedReplies.from_logic_lm(data_dir / "programs" / PROGRAMS), latency=0.05) as fake:
        stopped = run(fake, data_dir, tmp_path, "--max-concurrency", "8", "--max-tokens-total", "6000")
        assert stopped.returncode == 4, stopped.stderr
        last = stopped.stderr.strip().splitlines()[-1]
        # Which cap, and what was spent, however the stop came (reached, or about to be passed).
        assert last.startswith("error: --max-tokens-total 6000 ") and " tokens used)" in last, last
        kept = lines(folder / "formulate.jsonl")
        spent = json.loads((folder / "spent.json").read_text())
        tokens = spent["prompt_tokens"] + spent["completion_tokens"]
        # The requests in flight count at the mean so far: the cap is passed by about one request, not 8.
        assert tokens < 6000 + 3 * tokens / spent["sent"], spent
        assert 0 < len(kept) == len(fake.requests) < 20
        again = run(fake, data_dir, tmp_path, "--max-concurrency", "8", "--max-tokens-total", "100000")
        assert again.returncode == 0, again.stderr
        assert len(fake.requests) == 20 and asked_once(fake)
    assert len(lines(folder / "formulate.jsonl")) == 20


def test_the_first_window_waits_for_a_cost_to_go_by(data_dir, tmp_path):
    """With nothing spent yet, a request's cost is unknown: one goes alone until it is back, so a cap
    smaller than one request stops the run after it, not after --max-concurrency of them."""
    folder = tmp_path / "out" / "prontoqa"
    with FakeOpenAI(ScriptedReplies.from_logic_lm(data_dir / "programs" / PROGRAMS), latency=0.2) as fake:
        stopped = run(fake, data_dir, tmp_path, "--max-concurrency", "64", "--max-tokens-total", "10")
        assert stopped.returncode == 4, stopped.stderr
        assert len(fake.requests) == 1 and len(lines(folder / "formulate.jsonl")) == 1 and fake.peak_in_flight == 1
        assert "19 of 20 requests not sent" in stopped.stderr.strip().splitlines()[-1]
        # Once a reply has priced a request, the window opens again: a higher cap sends the rest at once.
        again = run(fake, data_dir, tmp_path, "--max-concurrency", "64", "--max-tokens-total", "1000000")
        assert again.returncode == 0, again.stderr
        assert len(fake.requests) == 20 and asked_once(fake)
        assert fake.peak_in_flight > 1


def test_a_server_that_reports_no_usage_stops_a_capped_run_after_one_request(data_dir, tmp_path):
    """A cap counts the tokens the server reports: where a reply reports none, it cannot be kept, so the
    run stops at once rather than spend without a bound."""
    folder = tmp_path / "out" / "prontoqa"
    with FakeOpenAI(ScriptedReplies.from_logic_lm(data_dir / "programs" / PROGRAMS), latency=0.1) as fake:
        fake.inject(*[Fault(usage={"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0})] * 20)
        stopped = run(fake, data_dir, tmp_path, "--max-concurrency", "8", "--max-tokens-total", "1000000")
        assert stopped.returncode == 4, stopped.stderr
        last = stopped.stderr.strip().splitlines()[-1]
        assert "say nothing of the tokens they used" in last and "re-run without the cap" in last, last
        assert len(fake.requests) == 1 and len(lines(folder / "formulate.jsonl")) == 1


def test_phased_requests_ask_the_cap_before_the_first_phase_sent_and_pay_for_failed_ones(data_dir, tmp_path):
    """--constrain on CSP sends each program in phases. A phase that fails still paid for those before it
    (the ledger counts them), and a request whose first phase is cached asks the cap before its second."""
    folder = tmp_path / "out" / "logicaldeduction"

    def constrained(fake, *extra):
        return cli("run", "-d", "logicaldeduction", "--data-dir", str(data_dir), "--out", str(tmp_path / "out"),
                   "--model", "fake", "--base-url", fake.url, "--llm-cache", str(tmp_path / "cache.sqlite"),
                   "--limit", "3", "--max-rounds", "0", "--constrain", "--max-concurrency", "1", "--max-retries", "0",
                   "--max-errors", "3", *extra)

    programs = ScriptedReplies.from_logic_lm(data_dir / "programs" / "LogicalDeduction_dev_gpt-4.json")
    with FakeOpenAI(programs) as fake:
        fake.inject(*[Fault(), Fault(status=500)] * 3)  # each program's second phase fails once
        first = constrained(fake, "--max-tokens-total", "1000000")
        assert first.returncode == 0, first.stderr
        assert {r["_logicpipe"]["phase"] for r in fake.requests} == {"1", "2"}
        spent = json.loads((folder / "spent.json").read_text())
        assert spent["prompt_tokens"] > 0  # the first phases of the failed requests were paid for
        sent = len(fake.requests)
        # The cap is long passed: the requests whose first phase is cached send nothing more.
        capped = constrained(fake, "--max-tokens-total", "10")
        assert capped.returncode == 4, capped.stderr
        assert len(fake.requests) == sent and "--max-tokens-total 10 reached" in capped.stderr


def test_baseline_takes_the_cap(data_dir, tmp_path):
    folder = tmp_path / "out" / "baseline-cot" / "prontoqa"
    with FakeOpenAI(ScriptedReplies.from_logic_lm(data_dir / "programs" / PROGRAMS)) as fake:
        stopped = run(fake, data_dir, tmp_path, "--mode", "cot", "--max-concurrency", "1",
                      "--max-tokens-total", "3000", command="baseline")
        assert stopped.returncode == 4, stopped.stderr
        assert "--max-tokens-total 3000 reached" in stopped.stderr
        assert 0 < len(lines(folder / "interpret.jsonl")) < 20
        again = run(fake, data_dir, tmp_path, "--mode", "cot", "--max-tokens-total", "100000", command="baseline")
        assert again.returncode == 0, again.stderr
        assert len(fake.requests) == 20 and asked_once(fake)
    assert len(lines(folder / "interpret.jsonl")) == 20


def test_a_cap_without_prices_or_out_of_range_is_one_line_before_anything_is_written(data_dir, tmp_path):
    with FakeOpenAI(ScriptedReplies.from_logic_lm(data_dir / "programs" / PROGRAMS)) as fake:
        for extra, message in ((["--max-cost", "1"], "--max-cost needs --price-prompt and/or --price-completion"),
                               ([*PRICES, "--max-cost", "nan"], "invalid option --max-cost"),
                               (["--max-tokens-total", "-1"], "--max-tokens-total: Input should be greater than")):
            done = run(fake, data_dir, tmp_path, *extra)
            assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
            assert message in done.stderr, done.stderr
        assert not (tmp_path / "out").exists() and not fake.requests
        formulate = run(fake, data_dir, tmp_path, "--max-cost", "1", command="formulate")
        assert formulate.returncode == 2 and "--max-cost needs" in formulate.stderr


def test_kb_ask_batch_stops_at_the_cap_and_resumes_from_the_cache(tmp_path):
    ids = [f"q01-{n}" for n in range(6)]
    questions = write_questions(tmp_path / "q.jsonl", ids)
    out = tmp_path / "run"
    base = ["kb", "ask", str(CAMPUS), "--questions", str(questions), "--out", str(out), "--max-concurrency", "1",
            *NOW]
    with FakeOpenAI(replies()) as server:
        # kb ask sends a wave at a time (every question's goals, about 3000 tokens here, then the answers):
        # the cap is reached among the answers.
        stopped = cli(*base, *model_args(server, tmp_path), "--max-tokens-total", "4000")
        assert stopped.returncode == 4, stopped.stderr
        assert "--max-tokens-total 4000 reached" in stopped.stderr
        kept = lines(out / "ask.jsonl")
        assert 0 < len(kept) < 6 and all(r["error"] is None for r in kept), (out / "spent.json").read_text()
        again = cli(*base, *model_args(server, tmp_path), "--max-tokens-total", "100000")
        assert again.returncode == 0, again.stderr
        assert asked_once(server)  # a question's goals asked before the stop come from the cache
    assert [r["id"] for r in lines(out / "ask.jsonl")] == ids
    bad = cli("kb", "ask", str(CAMPUS), "Who teaches cs101?", "--model", "fake", "--max-cost", "1")
    assert bad.returncode == 2 and bad.stderr == "error: invalid option: --max-cost needs --price-prompt " \
        "and/or --price-completion\n"


def test_a_request_cancelled_in_its_second_phase_is_handed_back_to_the_cap(tmp_path):
    """A caller that stops a run (on_result raising) cancels the requests in flight: one the cap let go
    is handed back, whichever phase it was in, so a cap reused afterwards does not wait for it forever."""
    import time

    from logicpipe.llm import LLMClient, LLMSettings, Request
    from logicpipe.llm.budget import Budget
    from logicpipe.stages.config import ModelOptions

    (tmp_path / "spent.json").write_text(json.dumps({"sent": 1, "prompt_tokens": 10, "completion_tokens": 10}))
    budget = Budget(ModelOptions(out=tmp_path, max_tokens_total=10**9, llm_cache=tmp_path / "c.sqlite"),
                    folder=tmp_path)

    def reply(body):
        meta = body["_logicpipe"]
        time.sleep(3 if (meta["problem"], meta["phase"]) == ("B", "2") else 0.3 if meta["problem"] == "E" else 0)
        return "reply"

    def request(name, phased=False):
        return Request(f"p-{name}", [{"role": "user", "content": name}], purpose="formulate", problem=name,
                       then=(lambda text: 'root ::= "x"') if phased else None)

    class Stop(Exception):
        pass

    def stop_at_e(request, result):
        if request.problem == "E":
            raise Stop()

    with FakeOpenAI(reply) as fake:
        client = LLMClient(LLMSettings(model="m", base_url=fake.url, cache_path=tmp_path / "c.sqlite",
                                       max_concurrency=4), gate=budget)
        try:
            client.run([request("B", phased=True), request("E")], stop_at_e)
        except Stop:
            pass
        assert ("B", "2") in [(r["_logicpipe"]["problem"], r["_logicpipe"]["phase"]) for r in fake.requests]
    assert budget._in_flight == 0


def test_a_cap_about_to_be_passed_names_itself_once_those_in_flight_are_back(tmp_path):
    """open() holds a request back when those in flight, at the mean so far, would pass the cap; the
    stop then names the cap and what was spent, though the total is still under it."""
    from logicpipe.llm import Completion
    from logicpipe.llm.budget import Budget
    from logicpipe.stages.config import ModelOptions

    (tmp_path / "spent.json").write_text(json.dumps({"sent": 10, "prompt_tokens": 9000, "completion_tokens": 500}))
    budget = Budget(ModelOptions(out=tmp_path, max_tokens_total=10000), folder=tmp_path)
    assert budget.open() is True and budget.open() is False  # 9500 + 950 in flight would pass 10000
    budget.charge(Completion("reply", 300, 100, cached=False))
    assert budget.tokens == 9900 < 10000
    assert budget.spent() == ("--max-tokens-total 10000 (9900 tokens used) would be passed by the next request "
                              "(counted at the mean of those sent)")
