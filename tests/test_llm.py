"""The LLM client against a real local HTTP server with the real openai client."""

import pytest

from logicpipe.errors import UsageError
from logicpipe.fakellm import FakeOpenAI, Fault
from logicpipe.llm import LLMClient, LLMError, LLMSettings, Request, cache_key, request_body

HELLO = [{"role": "user", "content": "hi"}]


def client(fake, tmp_path, **overrides):
    settings = dict(model="fake", base_url=fake.url, timeout=0.5, backoff_base=0.01, max_retries=4,
                    cache_path=tmp_path / "cache.sqlite")
    settings.update(overrides)
    return LLMClient(LLMSettings(**settings))


def collect(llm, requests):
    out = {}
    llm.run(requests, lambda request, result: out.__setitem__(request.key, result))
    return out


def test_faults_are_retried_and_the_reply_arrives(tmp_path):
    with FakeOpenAI(lambda body: "hello") as fake:
        fake.inject(Fault(status=429, headers={"Retry-After": "0.3"}), Fault(status=500),
                    Fault(malformed=True), Fault(delay=1.2), Fault(status=503))
        llm = client(fake, tmp_path, max_retries=5)
        out = collect(llm, [Request("a", HELLO)])
        assert out["a"].text == "hello" and not out["a"].cached
        assert len(fake.requests) == 6
        assert llm.totals.requests_sent == 6 and llm.totals.calls == 1


def test_retry_after_is_honoured(tmp_path):
    import time

    with FakeOpenAI(lambda body: "hello") as fake:
        fake.inject(Fault(status=429, headers={"Retry-After": "1.0"}))
        start = time.monotonic()
        collect(client(fake, tmp_path), [Request("a", HELLO)])
        assert time.monotonic() - start >= 1.0


def test_retries_run_out_into_an_error(tmp_path):
    with FakeOpenAI(lambda body: "hello") as fake:
        fake.inject(*[Fault(status=500)] * 3)
        out = collect(client(fake, tmp_path, max_retries=2), [Request("a", HELLO)])
        assert isinstance(out["a"], LLMError) and "gave up after 3 attempts" in str(out["a"])
        assert len(fake.requests) == 3


def test_refused_requests_are_not_retried(tmp_path):
    with FakeOpenAI(lambda body: "hello") as fake:
        fake.inject(Fault(status=401))
        out = collect(client(fake, tmp_path), [Request("a", HELLO)])
        assert isinstance(out["a"], LLMError) and "HTTP 401" in str(out["a"])
        assert len(fake.requests) == 1


def test_cache_answers_repeats_and_keeps_samples_apart(tmp_path):
    replies = iter(["one", "two", "three"])
    with FakeOpenAI(lambda body: next(replies)) as fake:
        llm = client(fake, tmp_path)
        first = collect(llm, [Request("s0", HELLO, 0.7, sample=0), Request("s1", HELLO, 0.7, sample=1)])
        assert {first["s0"].text, first["s1"].text} == {"one", "two"}
        again = collect(client(fake, tmp_path), [Request("s0", HELLO, 0.7, sample=0)])
        assert again["s0"].cached and again["s0"].text == first["s0"].text
        assert len(fake.requests) == 2


def test_cache_key_covers_everything_that_changes_a_reply():
    base = Request("k", HELLO, 0.0, 100, 0)
    keys = {cache_key("m", "u", base), cache_key("m2", "u", base), cache_key("m", "u2", base),
            cache_key("m", "u", Request("k", HELLO, 0.5, 100, 0)), cache_key("m", "u", Request("k", HELLO, 0.0, 99, 0)),
            cache_key("m", "u", Request("k", HELLO, 0.0, 100, 1)),
            cache_key("m", "u", Request("k", [{"role": "user", "content": "ho"}], 0.0, 100, 0))}
    assert len(keys) == 7
    assert request_body("m", base) == {"model": "m", "messages": HELLO, "temperature": 0.0, "max_tokens": 100}


def test_concurrency_is_capped(tmp_path):
    import threading

    live, peak = [0], [0]
    lock = threading.Lock()

    def slow(body):
        import time

        with lock:
            live[0] += 1
            peak[0] = max(peak[0], live[0])
        time.sleep(0.1)
        with lock:
            live[0] -= 1
        return "ok"

    with FakeOpenAI(slow) as fake:
        collect(client(fake, tmp_path, max_concurrency=3),
                [Request(str(i), [{"role": "user", "content": str(i)}]) for i in range(12)])
    assert peak[0] == 3


def test_missing_key_without_local_server(monkeypatch, tmp_path):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(UsageError, match="OPENAI_API_KEY"):
        LLMClient(LLMSettings(model="m", cache_path=tmp_path / "c.sqlite"))
