"""The one module that talks to language models: any OpenAI-compatible chat endpoint.

It owns concurrency (an adaptive in-flight limit: Pace and _Window below), a total deadline and a size
cap on every reply, retries (bounded exponential backoff with jitter that honours Retry-After), the
on-disk cache (keyed by everything that changes a reply, sample index included), token accounting and
the spending cap's check before each paid request (`may_send`). A reply is validated in full before it
is cached or counted: a malformed one is retried like a 5xx, never stored.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, StrictInt, StrictStr, ValidationError

from ..core.errors import BudgetSpent, LLMError, Paused
from ..core.jsonl import LONE_SURROGATE, MAX_RECORD_BYTES
from ..core.words import counted
from .cache import Cache, CachedReply
from .declared import MAX_PHASES
from .gate import Gate
from .request import Completion, Request, Totals, api_key, endpoint

# Worth another try: the server may be busy, restarting or briefly out of capacity.
_RETRY_STATUS = {408, 409, 429}
# The key, the account or the model is wrong: every other request of the run would fail the same way.
_FATAL_STATUS = {401, 403, 404}
# The server says it has too much to do: the in-flight limit shrinks (as it does on a timeout).
_OVERLOAD_STATUS = {429, 503}
_STANDARD_FIELDS = {"model", "messages", "temperature", "max_tokens", "stop"}
CHARGE_POLL = 0.05  # seconds between looks at a gate another thread charges (Gate.open None)


def text_bound(copies: int) -> int:
    """The largest reply text (as JSON) of which a record can hold `copies` beside its other fields."""
    return MAX_RECORD_BYTES // (copies + 2)


# A formulate record carries a reply twice (the program and the first sample); more samples, more copies.
MAX_TEXT_BYTES = text_bound(2)


class MalformedReply(Exception):
    """A 200 reply that is not a usable chat completion (bad JSON, wrong types, too big)."""


class CutReply(Exception):
    """The connection failed while the body was read (a reset, a peer that hung up): the openai client
    does not wrap these, since the body is read after it has returned the response."""


class OversizedReply(Exception):
    """A complete, valid reply whose text is too large for the record that would hold it."""

    def __init__(self, size: int):
        super().__init__(f"{size} bytes")


class LLMSettings(BaseModel):
    model: str
    base_url: str | None = None
    api_key: str | None = None
    max_concurrency: int = Field(default=8, ge=1, le=1024)
    max_retries: int = Field(default=5, ge=0, le=50)
    timeout: float = Field(default=120.0, gt=0)  # seconds for a whole request: connect, headers and body
    max_reply_bytes: int = Field(default=8 * 1024 * 1024, ge=1024)
    max_text_bytes: int = Field(default=MAX_TEXT_BYTES, ge=1024)  # of a reply's text, as JSON
    backoff_base: float = Field(default=0.5, ge=0)
    backoff_cap: float = Field(default=30.0, ge=0)
    cache_path: Path | None = None
    price_prompt: float | None = None  # per million tokens
    price_completion: float | None = None


class _Message(BaseModel):
    content: StrictStr


class _Choice(BaseModel):
    message: _Message


class _Usage(BaseModel):
    prompt_tokens: StrictInt = Field(default=0, ge=0)
    completion_tokens: StrictInt = Field(default=0, ge=0)


class _Reply(BaseModel):
    choices: list[_Choice] = Field(min_length=1)
    usage: _Usage | None = None  # some local servers send none


def parse_reply(data: bytes) -> CachedReply:
    """The text and token counts of a chat-completion body, or MalformedReply saying what is wrong."""
    try:
        raw = json.loads(data)
        reply = _Reply.model_validate(raw)
    except RecursionError:
        raise MalformedReply("the reply nests too deeply to read") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "body"
        raise MalformedReply(f"reply field {where}: {first['msg']}") from None
    except ValueError as exc:  # bad JSON or bad UTF-8
        raise MalformedReply(f"the reply is not JSON: {_short(exc, 120)}") from None
    usage = reply.usage or _Usage()
    # json.loads joins valid surrogate pairs, so any surrogate left is lone and could not be written
    # as UTF-8 later; it becomes U+FFFD, as a decoder would make of invalid bytes.
    text = LONE_SURROGATE.sub("\ufffd", reply.choices[0].message.content)
    return CachedReply(text=text, prompt_tokens=usage.prompt_tokens, completion_tokens=usage.completion_tokens)


def request_body(model: str, request: Request) -> dict[str, Any]:
    """The chat-completions body for a request (pure, so tests can check what is sent)."""
    body: dict[str, Any] = {"model": model, "messages": request.messages, "temperature": request.temperature,
                            "max_tokens": request.max_tokens}
    if request.stop:
        body["stop"] = list(request.stop)
    if request.seed is not None:
        body["seed"] = request.seed
    if request.grammar is not None:
        body[request.grammar_field] = request.grammar
    return body


def request_headers(request: Request) -> dict[str, str]:
    # The sample: which of a problem's K samples (LINC's, self-consistency's), so a test server can script
    # each; not part of the cache key (the request's own sample index is).
    headers = {"X-Logicpipe-Purpose": request.purpose, "X-Logicpipe-Problem": request.problem,
               "X-Logicpipe-Sample": str(request.sample)}
    if request.phase:
        headers["X-Logicpipe-Phase"] = str(request.phase)
    return headers


def cache_key(model: str, base_url: str, request: Request) -> str:
    material = json.dumps({**request_body(model, request), "base_url": base_url, "sample": request.sample},
                          sort_keys=True)
    return hashlib.sha256(material.encode()).hexdigest()


def default_cache_path() -> Path:
    from ..data.fetch import cache_dir

    return cache_dir() / "llm-cache.sqlite"


OnResult = Callable[[Request, "Completion | LLMError"], None]


class Pace:
    """The in-flight limit, adapted to what the server can take (additive increase, multiplicative
    decrease, as TCP does): a 429, a 503 or a timeout multiplies it by DECREASE (once for all the
    requests that were sent at the old limit: one overload is one signal, however many it hit), and
    each reply that arrives while the limit is what holds requests back adds 1 / limit (one more request
    in flight per limit's worth of replies). It stays between 1 and `ceiling` (--max-concurrency).

    Plain numbers, no asyncio: a run's clients share one Pace (RunContext.pace), so that each refinement
    round starts where the last one settled instead of at the ceiling."""

    DECREASE = 0.7  # CUBIC's factor: the limit then swings between 0.7 and 1 of what the server takes

    def __init__(self, ceiling: int):
        self.ceiling = ceiling
        self.limit = float(ceiling)
        self.lowest = ceiling
        self.overloads = 0  # 429s, 503s and timeouts seen
        self.epoch = 0  # bumped by each decrease; a request sent before it is no new signal

    @property
    def allowed(self) -> int:
        return max(1, int(self.limit))

    def succeeded(self, binding: bool) -> None:
        if binding and self.limit < self.ceiling:
            self.limit = min(float(self.ceiling), self.limit + 1.0 / self.limit)

    def overloaded(self, epoch: int) -> None:
        self.overloads += 1
        if epoch == self.epoch:
            self.limit = max(1.0, self.limit * self.DECREASE)
            self.epoch += 1
            self.lowest = min(self.lowest, self.allowed)

    def summary(self) -> dict[str, int]:
        """Where the limit settled (as the run ended), the lowest it went, the ceiling and the overloads."""
        return {"settled": self.allowed, "lowest": self.lowest, "ceiling": self.ceiling,
                "overloads": self.overloads}


class _Window:
    """At most pace.allowed requests in flight in one event loop; waiters are served in order, a
    retry before requests not yet sent."""

    def __init__(self, pace: Pace):
        self.pace = pace
        self.busy = 0
        self._waiting: deque[asyncio.Future[None]] = deque()

    async def enter(self, first: bool = True) -> int:
        """Wait for a place; the epoch the request is sent in (for Pace.overloaded)."""
        if self.busy < self.pace.allowed and not self._waiting:
            self.busy += 1
            return self.pace.epoch
        turn = asyncio.get_running_loop().create_future()
        if first:
            self._waiting.append(turn)
        else:
            self._waiting.appendleft(turn)
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():
                self.leave()  # given a place just as it was cancelled: give it back
            elif turn in self._waiting:
                self._waiting.remove(turn)
            raise
        return self.pace.epoch

    def leave(self, ok: bool = False) -> None:
        if ok:  # the limit held requests back (all places taken, or some waiting): it may grow
            self.pace.succeeded(self.busy >= self.pace.allowed or bool(self._waiting))
        self.busy -= 1
        while self._waiting and self.busy < self.pace.allowed:
            turn = self._waiting.popleft()
            if not turn.done():
                self.busy += 1
                turn.set_result(None)


@dataclass
class _Opened:
    """Whether the gate let a request go (asked once, before the first of its phases that is sent)."""

    done: bool = False


class Held(Exception):
    """The spending cap (the gate's `open`) held a request back before it was sent: it has no result."""


class LLMClient:
    def __init__(self, settings: LLMSettings, pace: Pace | None = None, gate: Gate | None = None):
        self.settings = settings
        self.base_url = endpoint(settings.base_url)
        self._api_key = api_key(settings.base_url, settings.api_key)
        self._cache = Cache(settings.cache_path or default_cache_path())
        self.totals = Totals()
        self.pace = pace if pace is not None else Pace(settings.max_concurrency)
        # A spending cap: it admits a run's requests, is charged each result before on_result sees it,
        # and is asked (open) just before each request the cache cannot answer is sent.
        self.gate = gate
        self.held = 0  # requests of the last run the gate held back unsent; they have no result
        self._window = _Window(self.pace)  # a new one for each run (its waiters belong to that run's loop)
        self._replied = asyncio.Event()

    def run(self, requests: Iterable[Request], on_result: OnResult) -> None:
        """Send all requests, at most the pace's limit (at most max_concurrency) at a time; call
        on_result as each one ends. With a gate, those it holds back get no result: BudgetSpent is
        raised once the others are back (the run stops between requests, what arrived handed over).

        If on_result raises (a caller stopping the run), the outstanding requests are cancelled, the
        client is closed and the exception propagates."""
        wanted = list(requests)
        gate = self.gate
        allowed = wanted if gate is None else gate.admit(self.settings.model, wanted)
        self.held = len(wanted) - len(allowed)
        try:
            asyncio.run(self._run(allowed, on_result))
        except BaseException:
            self.close()
            raise
        if self.held and gate is not None:
            stop = Paused if getattr(gate, "expected", False) else BudgetSpent
            raise stop(f"{gate.spent() or 'the model budget is spent'}: {self.held} of "
                       f"{counted(len(wanted), 'request')} {gate.held_as}; {gate.resume()}")

    async def _run(self, requests: list[Request], on_result: OnResult) -> None:
        import openai

        client = openai.AsyncOpenAI(base_url=self.base_url, api_key=self._api_key, max_retries=0,
                                    timeout=self.settings.timeout)
        self._window = _Window(self.pace)
        self._replied = asyncio.Event()  # set (and replaced) each time a result is charged to the gate

        async def one(request: Request) -> tuple[Request, Completion | LLMError | None]:
            result: Completion | LLMError
            try:
                opened = _Opened()
                if request.then is None:
                    result = await self._complete(client, request, opened)
                else:
                    result = await self._phases(client, request, request.then, opened)
            except Held:
                self.held += 1
                return request, None
            except LLMError as exc:
                name = type(exc.__cause__).__name__ if exc.__cause__ else "LLMError"
                self.totals.failures[name] = self.totals.failures.get(name, 0) + 1
                result = exc
            if self.gate is not None:
                # Charged here, before the request it let into the window is sent: as_completed hands
                # the result over only after that one has asked the gate.
                self.gate.charge(result)
                self._replied.set()
                self._replied = asyncio.Event()
            return request, result

        tasks = [asyncio.ensure_future(one(r)) for r in requests]
        try:
            for finished in asyncio.as_completed(tasks):
                request, result = await finished
                if result is not None:
                    on_result(request, result)
        finally:
            # Reached early only when on_result raised: every task is cancelled and awaited, so none
            # is left to report an exception nobody retrieved.
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await client.close()

    async def _phases(self, client: Any, request: Request, then: Callable[[str], str | None],
                      opened: _Opened) -> Completion:
        """The first phase's reply, then each next phase's for as long as `then` gives a grammar for
        the text so far (the last reply holds the whole text); tokens are those of every phase. A phase
        that fails carries the tokens of the phases sent before it (they were paid for)."""
        replies: list[Completion] = []
        try:
            replies.append(await self._complete(client, replace(request, then=None, phase=1), opened))
            for phase in range(2, MAX_PHASES + 1):
                grammar = then(replies[-1].text)
                if grammar is None:
                    break
                replies.append(await self._complete(client, replace(request, then=None, phase=phase, grammar=grammar),
                                                    opened))
        except LLMError as exc:
            paid = [r for r in replies if not r.cached]
            exc.prompt_tokens = sum(r.prompt_tokens for r in paid)
            exc.completion_tokens = sum(r.completion_tokens for r in paid)
            raise
        return Completion(replies[-1].text, sum(r.prompt_tokens for r in replies),
                          sum(r.completion_tokens for r in replies), all(r.cached for r in replies),
                          all(r.batch for r in replies))

    async def _complete(self, client: Any, request: Request, opened: _Opened) -> Completion:
        """One request (or one phase of it): from the cache, else sent. The gate is asked before the
        first of a request's phases that is sent (`opened` says whether it was)."""
        import openai

        key = cache_key(self.settings.model, self.base_url, request)
        hit = self._cache.get(key)
        if hit is not None:
            batch = hit.batch is not None and self.gate is not None and self.gate.batched(hit.batch)
            self.totals.calls += 1
            self.totals.cached_calls += not batch
            self.totals.batch_calls += batch
            return Completion(hit.text, hit.prompt_tokens, hit.completion_tokens, cached=True, batch=batch)
        failed = self.gate.failure(key) if self.gate is not None else None
        if failed is not None:  # its line failed in a provider's batch (--batch): its record says so
            self.totals.calls += 1
            raise failed
        # A request retried after an ordinary failure (a reset, a 500, a malformed reply) keeps its place
        # in the window through its backoff, and goes again before any request not yet sent; one retried
        # after an overload (429, 503, a timeout) gives its place up, so the smaller limit holds at once.
        window = self._window
        placed = False
        epoch = attempt = 0
        try:
            while True:
                if not placed:
                    epoch = await window.enter(first=attempt == 0)
                    placed = True
                    # Asked once a place is free, just before sending: the spending cap then counts the
                    # replies that came back meanwhile. A later phase or a retry finishes what was begun.
                    if attempt == 0 and self.gate is not None and not opened.done:
                        verdict = self.gate.open()
                        if verdict is None:  # not yet: the place goes back until a reply is charged
                            placed = False
                            window.leave()
                            await self._charged()
                            continue
                        if not verdict:
                            raise Held()
                        opened.done = True
                retry_after = None
                self.totals.requests_sent += 1
                overload = False
                try:
                    reply = await asyncio.wait_for(self._fetch(client, request), self.settings.timeout)
                    placed = False
                    window.leave(ok=True)
                    break
                except openai.APIStatusError as exc:
                    status = exc.status_code
                    if status not in _RETRY_STATUS and status < 500:
                        raise LLMError(f"HTTP {status}: {_short(exc)}", fatal=status in _FATAL_STATUS) from exc
                    retry_after = _retry_after(exc)
                    overload = status in _OVERLOAD_STATUS
                    failure: Exception = exc
                except asyncio.TimeoutError as exc:
                    failure = TimeoutError(f"no complete reply within {self.settings.timeout:g} s")
                    failure.__cause__ = exc
                    overload = True
                except openai.APITimeoutError as exc:
                    failure, overload = exc, True
                except (openai.APIConnectionError, CutReply, MalformedReply) as exc:
                    failure = exc
                if overload:
                    self.pace.overloaded(epoch)
                    placed = False
                    window.leave()
                if attempt >= self.settings.max_retries:
                    raise LLMError(f"gave up after {attempt + 1} attempts: {type(failure).__name__}: "
                                   f"{_short(failure)}", transient=True) from failure
                await asyncio.sleep(self._delay(attempt, retry_after))
                attempt += 1
        except asyncio.CancelledError:
            if opened.done and self.gate is not None:  # it will never be charged: the gate waits for it no more
                self.gate.cancelled()
            raise
        finally:
            if placed:  # a fatal status, given up, or cancelled
                window.leave()
        self._check_size(reply)
        self._cache.put(key, reply, model=self.settings.model, time=time.time())
        self.totals.calls += 1
        self.totals.prompt_tokens += reply.prompt_tokens
        self.totals.completion_tokens += reply.completion_tokens
        return Completion(reply.text, reply.prompt_tokens, reply.completion_tokens, cached=False)

    async def _charged(self) -> None:
        """Until a result is charged to the gate: by this run, or (the gate is shared by the stages'
        threads, each with a loop of its own) by another, which is looked for every CHARGE_POLL seconds."""
        try:
            await asyncio.wait_for(self._replied.wait(), CHARGE_POLL)
        except asyncio.TimeoutError:
            pass

    def _check_size(self, reply: CachedReply) -> None:
        """A reply whose text no record could hold is never cached: the record says so and a re-run asks
        again. Not retried: the same request would most likely get the same reply."""
        size = len(json.dumps(reply.text, ensure_ascii=False).encode("utf-8"))
        if size > self.settings.max_text_bytes:
            self.totals.calls += 1
            raise LLMError(f"the reply's text is {size} bytes, over the {self.settings.max_text_bytes} bytes "
                           "a record can hold; not cached, a re-run asks again (lower --max-tokens)",
                           transient=True) from OversizedReply(size)

    async def _fetch(self, client: Any, request: Request) -> CachedReply:
        """One attempt: the whole body, read up to the size cap, then validated."""
        cap = self.settings.max_reply_bytes
        over = f"the reply is over the {cap}-byte cap"
        body = request_body(self.settings.model, request)
        # Fields the openai client does not know (a grammar) travel in extra_body.
        extra = {key: body.pop(key) for key in list(body) if key not in _STANDARD_FIELDS}
        async with client.chat.completions.with_streaming_response.create(
                **body, extra_body=extra or None, extra_headers=request_headers(request)) as response:
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > cap:
                raise MalformedReply(over)
            chunks: list[bytes] = []
            size = 0
            body = response.iter_bytes()
            while True:
                try:
                    chunk = await body.__anext__()
                except StopAsyncIteration:
                    break
                except Exception as exc:  # noqa: BLE001 - the transport's error classes differ between versions
                    raise CutReply(f"the connection failed mid-reply ({type(exc).__name__}: {_short(exc)})") from exc
                size += len(chunk)
                if size > cap:
                    raise MalformedReply(over)
                chunks.append(chunk)
        return parse_reply(b"".join(chunks))

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, max(self.settings.backoff_cap, 1.0))
        ceiling = min(self.settings.backoff_cap, self.settings.backoff_base * (2 ** attempt))
        return random.uniform(ceiling / 2, ceiling)  # jitter keeps parallel retries apart

    def close(self) -> None:
        self._cache.close()


def _retry_after(exc: Any) -> float | None:
    try:
        value = exc.response.headers.get("retry-after")
        return max(0.0, float(value)) if value is not None else None
    except (AttributeError, TypeError, ValueError):
        return None


def _short(exc: Exception, limit: int = 300) -> str:
    text = " ".join(str(exc).split())
    return text[:limit]
