"""The LLM client against a real local HTTP server with the real openai client."""

import pytest

from logicpipe.core.errors import UsageError
from logicpipe.llm import LLMClient, LLMError, LLMSettings, Request, cache_key, request_body
from logicpipe.testing import FakeOpenAI, Fault

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


BAD_REPLIES = {
    "usage as a string": Fault(usage={"prompt_tokens": "10"}),
    "usage as a float": Fault(usage={"prompt_tokens": 10.5}),
    "nested brackets": Fault(body=b"[" * 200_000),
    "invalid UTF-8": Fault(body=b'{"choices": [{"message": {"content": "\xff\xfe"}}]}'),
    "no choices": Fault(body=b'{"choices": []}'),
    "oversize body": Fault(oversize=9 * 1024 * 1024),
}


@pytest.mark.parametrize("name", list(BAD_REPLIES))
def test_a_malformed_reply_is_retried_and_never_cached(tmp_path, name):
    with FakeOpenAI(lambda body: "hello") as fake:
        fake.inject(BAD_REPLIES[name])
        out = collect(client(fake, tmp_path), [Request("a", HELLO)])
        assert out["a"].text == "hello" and len(fake.requests) == 2
        fake.inject(BAD_REPLIES[name], BAD_REPLIES[name])
        failed = collect(client(fake, tmp_path, max_retries=1), [Request("b", [{"role": "user", "content": "b"}])])
        assert isinstance(failed["b"], LLMError) and failed["b"].transient and not failed["b"].fatal
        assert "MalformedReply" in str(failed["b"]) and "\n" not in str(failed["b"])
        # Nothing bad was cached: the re-run asks again and gets the good reply.
        again = collect(client(fake, tmp_path), [Request("b", [{"role": "user", "content": "b"}])])
        assert again["b"].text == "hello" and not again["b"].cached


def test_usage_is_validated_and_counted(tmp_path):
    with FakeOpenAI(lambda body: "hello") as fake:
        fake.inject(Fault(usage={"prompt_tokens": "10"}), Fault(usage={"prompt_tokens": 7, "completion_tokens": 3}))
        llm = client(fake, tmp_path)
        out = collect(llm, [Request("a", HELLO)])
        assert (out["a"].prompt_tokens, out["a"].completion_tokens) == (7, 3)
        assert llm.totals.prompt_tokens == 7 and llm.totals.failures == {}


def test_lone_surrogates_are_replaced_before_caching(tmp_path):
    with FakeOpenAI(lambda body: "hello") as fake:
        fake.inject(Fault(content="A\ud800B \U0001F600"))
        out = collect(client(fake, tmp_path), [Request("a", HELLO)])
        assert out["a"].text == "A\ufffdB \U0001F600"
        out["a"].text.encode("utf-8")
        assert collect(client(fake, tmp_path), [Request("a", HELLO)])["a"].text == "A\ufffdB \U0001F600"


@pytest.mark.parametrize("fault", [Fault(trickle=0.2), Fault(endless=True)], ids=["trickle", "endless"])
def test_every_request_has_a_total_deadline(tmp_path, fault):
    import time

    with FakeOpenAI(lambda body: "hello") as fake:
        fake.inject(fault, fault)
        start = time.monotonic()
        out = collect(client(fake, tmp_path, timeout=1.0, max_retries=1), [Request("a", HELLO)])
        assert time.monotonic() - start < 4
        assert isinstance(out["a"], LLMError) and out["a"].transient
        assert "no complete reply within 1 s" in str(out["a"])


@pytest.mark.parametrize("status,fatal", [(401, True), (403, True), (404, True), (400, False), (422, False)])
def test_refusals_are_classified(tmp_path, status, fatal):
    with FakeOpenAI(lambda body: "hello") as fake:
        fake.inject(Fault(status=status))
        error = collect(client(fake, tmp_path), [Request("a", HELLO)])["a"]
        assert isinstance(error, LLMError) and f"HTTP {status}" in str(error)
        assert (error.fatal, error.transient) == (fatal, False)
        assert len(fake.requests) == 1


class Stop(Exception):
    pass


def test_a_raising_callback_cancels_the_rest_cleanly(tmp_path, caplog):
    import gc
    import warnings

    seen = []

    def stop_at_first(request, result):
        seen.append(request.key)
        raise Stop("error budget spent")

    with FakeOpenAI(lambda body: "hello", latency=0.2) as fake:
        llm = client(fake, tmp_path, max_concurrency=2)
        requests = [Request(str(i), [{"role": "user", "content": str(i)}]) for i in range(40)]
        with warnings.catch_warnings(record=True) as caught, caplog.at_level("ERROR", logger="asyncio"):
            warnings.simplefilter("always")
            with pytest.raises(Stop, match="error budget spent"):
                llm.run(requests, stop_at_first)
            gc.collect()
        assert len(seen) == 1 and len(fake.requests) <= 4
        assert not [w for w in caught if "never awaited" in str(w.message)]
        assert "never retrieved" not in caplog.text
        # The client is closed: its cache cannot be used again.
        with pytest.raises(Exception, match="closed"):
            llm.run(requests[:1], stop_at_first)


def test_a_body_without_length_is_cut_at_the_size_cap(tmp_path):
    with FakeOpenAI(lambda body: "hello") as fake:
        fake.inject(Fault(endless=True), Fault(endless=True))
        out = collect(client(fake, tmp_path, timeout=30, max_retries=1, max_reply_bytes=4096), [Request("a", HELLO)])
        assert isinstance(out["a"], LLMError) and "over the 4096-byte cap" in str(out["a"])


def test_a_bad_row_cached_by_an_older_version_is_asked_again(tmp_path):
    import json
    import sqlite3

    with FakeOpenAI(lambda body: "hello") as fake:
        client(fake, tmp_path).close()  # creates the cache file
        key = cache_key("fake", fake.url, Request("a", HELLO))
        with sqlite3.connect(tmp_path / "cache.sqlite") as db:
            db.execute("INSERT INTO completions VALUES (?, ?)",
                       (key, json.dumps({"text": "stale", "prompt_tokens": "10", "completion_tokens": 1})))
        out = collect(client(fake, tmp_path), [Request("a", HELLO)])
        assert out["a"].text == "hello" and not out["a"].cached and len(fake.requests) == 1
        assert collect(client(fake, tmp_path), [Request("a", HELLO)])["a"].cached
