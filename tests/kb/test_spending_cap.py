"""kb validate's spending cap (--max-cost with the prices, --max-tokens-total), through the CLI against the
scripted server: a batch stops between requests with its finished records kept, and a re-run with a
higher cap finishes it without asking the server anything twice (optimize/calls.py Budget, kb ask's gate)."""

import json
from collections import Counter

from logicpipe.testing import FakeOpenAI
from tests.kb.test_batch import records
from tests.kb.test_modes import CAMPUS, CLAIMS, NOW

PRICES = ["--price-prompt", "1", "--price-completion", "2"]  # per million tokens
IDS = [f"{key}-{n}" for n in range(3) for key in ("a1", "a2", "a3")]


def claims(body):
    """The claims of an answer whose id starts with one of test_modes' CLAIMS keys (a1-0 -> a1's)."""
    return json.dumps(CLAIMS[body["_logicpipe"]["problem"].split("-")[0]])


def test_kb_validate_stops_at_the_cap_and_a_rerun_with_a_higher_cap_finishes_it(kbcli, tmp_path):
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps({"id": key, "answer": f"answer {key}"}) + "\n" for key in IDS))
    out = tmp_path / "run"
    base = ["kb", "validate", str(CAMPUS), "--answers", str(answers), "--out", str(out), *NOW, "--model", "fake",
            "--llm-cache", str(tmp_path / "cache.sqlite"), *PRICES]
    with FakeOpenAI(claims) as server:
        # About 520 tokens a request, 0.00057 at these prices: the cap is reached after three requests. The
        # first waits for its price; then eight may be in flight, counted at the mean of those sent.
        stopped = kbcli(*base, "--base-url", server.url, "--max-cost", "0.0015")
        assert stopped.returncode == 4, stopped.stderr
        assert "--max-cost 0.0015 reached" in stopped.stderr and "requests not sent" in stopped.stderr
        kept = records(out, "validate")
        assert 0 < len(kept) < len(IDS) and all(r["error"] is None and r["claims"] for r in kept)
        assert len(kept) == len(server.requests) <= 4
        spent = json.loads((out / "spent.json").read_text())
        assert spent["sent"] == len(server.requests) and 0.0015 <= spent["cost"] < 0.0015 + 0.001

        again = kbcli(*base, "--base-url", server.url, "--max-cost", "1")
        assert again.returncode == 0, again.stderr
        assert f"({len(IDS) - len(kept)} new, 0 with errors)" in again.stderr
        asked = Counter(r["_logicpipe"]["problem"] for r in server.requests)
        assert sorted(asked) == sorted(IDS) and set(asked.values()) == {1}  # nothing asked twice

        # --max-tokens-total counts the folder's earlier runs too: what they spent is past 1000 tokens.
        more = answers.read_text() + json.dumps({"id": "a2-9", "answer": "answer a2-9"}) + "\n"
        answers.write_text(more)
        capped = kbcli(*base, "--base-url", server.url, "--max-tokens-total", "1000")
        assert capped.returncode == 4 and "--max-tokens-total 1000 reached" in capped.stderr, capped.stderr
        assert len(server.requests) == len(IDS)
    done = records(out, "validate")
    assert [r["id"] for r in done] == IDS and all(r["error"] is None for r in done)
    assert [r["valid"] for r in done] == [False, True, False] * 3


def test_a_cap_on_kb_validate_without_prices_is_one_line_before_anything_is_written(kbcli, tmp_path):
    answers = tmp_path / "answers.jsonl"
    answers.write_text('{"id": "a2", "answer": "x"}\n')
    out = tmp_path / "run"
    for args, said in ((["--answers", str(answers), "--out", str(out), "--max-cost", "1"],
                        "error: invalid option: --max-cost needs --price-prompt and/or --price-completion\n"),
                       (["--answer", "x", "--max-tokens-total", "-1"],
                        "error: invalid option --max-tokens-total: Input should be greater than or equal to 0\n")):
        bad = kbcli("kb", "validate", str(CAMPUS), *args, "--model", "m", "--base-url", "http://127.0.0.1:9/v1")
        assert bad.returncode == 2 and bad.stderr == said, bad.stderr
    assert not out.exists()


def test_a_capped_single_question_says_no_answer_is_written(kbcli, tmp_path):
    # One question has no folder: the stop line must not speak of finished records kept.
    def reply(body):
        return "```prolog\nstudent(bob)\n```" if body["_logicpipe"]["purpose"] == "kb-goals" else "Yes."

    with FakeOpenAI(reply) as server:
        stopped = kbcli("kb", "ask", str(CAMPUS), "Is Bob a student?", *NOW, "--model", "fake", "--base-url",
                        server.url, "--llm-cache", str(tmp_path / "cache.sqlite"), "--max-tokens-total", "10")
        assert len(server.requests) == 1  # the goals; the answer's request is held back
    assert stopped.returncode == 4 and stopped.stdout == ""
    last = stopped.stderr.strip().splitlines()[-1]
    assert "1 of 1 request not sent; no answer is written; re-run with a higher cap" in last, last
