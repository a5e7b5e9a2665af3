"""The one module that talks to language models: any OpenAI-compatible chat endpoint.

It owns concurrency (a semaphore), retries (bounded exponential backoff with jitter that honours
Retry-After), the on-disk SQLite cache (keyed by everything that changes a reply, sample index
included), and token accounting.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import random
import sqlite3
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from .errors import LLMError, UsageError

_FATAL_STATUS = {400, 401, 403, 404, 422}


class LLMSettings(BaseModel):
    model: str
    base_url: str | None = None
    api_key: str | None = None
    max_concurrency: int = Field(default=8, ge=1, le=1024)
    max_retries: int = Field(default=5, ge=0, le=50)
    timeout: float = Field(default=120.0, gt=0)
    backoff_base: float = Field(default=0.5, ge=0)
    backoff_cap: float = Field(default=30.0, ge=0)
    cache_path: Path | None = None
    price_prompt: float | None = None  # per million tokens
    price_completion: float | None = None


@dataclass
class Request:
    key: str
    messages: list[dict[str, str]]
    temperature: float = 0.0
    max_tokens: int = 2048
    sample: int = 0
    # What the request is for (formulate, refine, cot, ...) and which problem it serves. Sent as
    # X-Logicpipe-* headers, which real servers ignore, so local test servers can route on them.
    purpose: str = ""
    problem: str = ""


@dataclass
class Completion:
    text: str
    prompt_tokens: int
    completion_tokens: int
    cached: bool


@dataclass
class Totals:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    cached_calls: int = 0
    requests_sent: int = 0
    failures: dict[str, int] = field(default_factory=dict)


def request_body(model: str, request: Request) -> dict[str, Any]:
    """The chat-completions body for a request (pure, so tests can check what is sent)."""
    return {"model": model, "messages": request.messages, "temperature": request.temperature,
            "max_tokens": request.max_tokens}


def request_headers(request: Request) -> dict[str, str]:
    return {"X-Logicpipe-Purpose": request.purpose, "X-Logicpipe-Problem": request.problem}


def cache_key(model: str, base_url: str, request: Request) -> str:
    material = json.dumps({**request_body(model, request), "base_url": base_url, "sample": request.sample},
                          sort_keys=True)
    return hashlib.sha256(material.encode()).hexdigest()


class _Cache:
    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        # A reply lost to a power cut is only asked again; fsync per reply would stall the event loop.
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS completions (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        self._db.commit()

    def get(self, key: str) -> dict | None:
        row = self._db.execute("SELECT value FROM completions WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, key: str, value: dict) -> None:
        self._db.execute("INSERT OR REPLACE INTO completions VALUES (?, ?)", (key, json.dumps(value)))
        self._db.commit()

    def close(self) -> None:
        self._db.close()


def default_cache_path() -> Path:
    from .data.fetch import cache_dir

    return cache_dir() / "llm-cache.sqlite"


class LLMClient:
    def __init__(self, settings: LLMSettings):
        self.settings = settings
        self.base_url = settings.base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        api_key = settings.api_key or os.environ.get("OPENAI_API_KEY")
        if not api_key:
            if settings.base_url or os.environ.get("OPENAI_BASE_URL"):
                api_key = "not-needed"  # local servers (vLLM, Ollama, llama.cpp) accept any key
            else:
                raise UsageError("set OPENAI_API_KEY, or --base-url for a local OpenAI-compatible server")
        self._api_key = api_key
        self._cache = _Cache(settings.cache_path or default_cache_path())
        self.totals = Totals()

    def cost(self) -> float | None:
        s = self.settings
        if s.price_prompt is None and s.price_completion is None:
            return None
        return round((self.totals.prompt_tokens * (s.price_prompt or 0)
                      + self.totals.completion_tokens * (s.price_completion or 0)) / 1e6, 6)

    def run(self, requests: Iterable[Request], on_result: Callable[[Request, Completion | LLMError], None]) -> None:
        """Send all requests, at most max_concurrency at a time; call on_result as each one ends."""
        asyncio.run(self._run(list(requests), on_result))

    async def _run(self, requests: list[Request], on_result) -> None:
        import openai

        client = openai.AsyncOpenAI(base_url=self.base_url, api_key=self._api_key, max_retries=0,
                                    timeout=self.settings.timeout)
        gate = asyncio.Semaphore(self.settings.max_concurrency)

        async def one(request: Request) -> tuple[Request, Completion | LLMError]:
            async with gate:
                try:
                    return request, await self._complete(client, request)
                except LLMError as exc:
                    name = type(exc.__cause__).__name__ if exc.__cause__ else "LLMError"
                    self.totals.failures[name] = self.totals.failures.get(name, 0) + 1
                    return request, exc

        tasks = [asyncio.ensure_future(one(r)) for r in requests]
        try:
            for finished in asyncio.as_completed(tasks):
                request, result = await finished
                on_result(request, result)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await client.close()

    async def _complete(self, client: Any, request: Request) -> Completion:
        import openai

        key = cache_key(self.settings.model, self.base_url, request)
        hit = self._cache.get(key)
        if hit is not None:
            self.totals.calls += 1
            self.totals.cached_calls += 1
            return Completion(hit["text"], hit["prompt_tokens"], hit["completion_tokens"], cached=True)
        attempt = 0
        while True:
            retry_after = None
            try:
                self.totals.requests_sent += 1
                response = await client.chat.completions.create(**request_body(self.settings.model, request),
                                                                extra_headers=request_headers(request))
                text = response.choices[0].message.content
                if not isinstance(text, str):
                    raise ValueError("the reply has no message content")
                usage = response.usage
                prompt_tokens = getattr(usage, "prompt_tokens", 0) or 0
                completion_tokens = getattr(usage, "completion_tokens", 0) or 0
                break
            except openai.APIStatusError as exc:
                if exc.status_code in _FATAL_STATUS:
                    raise LLMError(f"HTTP {exc.status_code}: {_short(exc)}",
                                   fatal=exc.status_code in (401, 403, 404)) from exc
                retry_after = _retry_after(exc)
                failure: Exception = exc
            except (openai.APITimeoutError, openai.APIConnectionError) as exc:
                failure = exc
            except (openai.APIResponseValidationError, ValueError, TypeError, AttributeError, IndexError) as exc:
                failure = exc  # a malformed body: worth another try
            if attempt >= self.settings.max_retries:
                raise LLMError(f"gave up after {attempt + 1} attempts: {type(failure).__name__}: "
                               f"{_short(failure)}", transient=True) from failure
            await asyncio.sleep(self._delay(attempt, retry_after))
            attempt += 1
        self._cache.put(key, {"text": text, "prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                              "model": self.settings.model, "time": time.time()})
        self.totals.calls += 1
        self.totals.prompt_tokens += prompt_tokens
        self.totals.completion_tokens += completion_tokens
        return Completion(text, prompt_tokens, completion_tokens, cached=False)

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


def _short(exc: Exception) -> str:
    text = str(exc).replace("\n", " ")
    return text[:300]
