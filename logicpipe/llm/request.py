"""What a model request is, what comes back, and where it goes: light, so that the stages can name
requests without importing the client (asyncio, the HTTP stack, the cache), which only a run that
asks a model loads."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field

from ..core.errors import UsageError


@dataclass
class Request:
    key: str
    messages: list[dict[str, str]]
    temperature: float = 0.0
    max_tokens: int = 2048
    sample: int = 0
    # The sampling seed sent with the request (--epochs: epoch k > 1 sends k, so each epoch is its own
    # request and its own cache entry); None sends none, as every request did before epochs existed.
    seed: int | None = None
    # What the request is for (formulate, refine, cot, ...) and which problem it serves. Sent as
    # X-Logicpipe-* headers, which real servers ignore, so local test servers can route on them.
    purpose: str = ""
    problem: str = ""
    # A grammar the server constrains decoding with (--constrain), and the body field it goes in:
    # "grammar" for llama.cpp servers, "guided_grammar" for vLLM.
    grammar: str | None = None
    grammar_field: str = "grammar"
    # Phased constrained decoding (llm/declared.py): given the text so far, the grammar of the next
    # phase's request, whose reply holds the whole text; None: the text so far is the reply.
    then: Callable[[str], str | None] | None = None
    phase: int = 0  # 1, 2, ... in a phased request (sent as X-Logicpipe-Phase), else 0
    # Stop sequences: the server ends the reply where the model writes one (Logic-LM's prompts use
    # "------" between their examples). Sent as a list, which every OpenAI-compatible server takes.
    stop: tuple[str, ...] = ()


@dataclass
class Completion:
    text: str
    prompt_tokens: int
    completion_tokens: int
    cached: bool  # not sent by this request: the reply cache answered it
    batch: bool = False  # cached, from one of this run's batches (paid for there, at the batch price)


@dataclass
class Totals:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    cached_calls: int = 0
    batch_calls: int = 0
    requests_sent: int = 0
    failures: dict[str, int] = field(default_factory=dict)


def endpoint(base_url: str | None) -> str:
    """Where requests go: --base-url, else OPENAI_BASE_URL, else OpenAI's API."""
    return base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"


def api_key(base_url: str | None, given: str | None = None) -> str:
    """The key requests carry; UsageError when there is none and no local endpoint (callers check
    this before they write anything)."""
    key = given or os.environ.get("OPENAI_API_KEY")
    if key:
        return key
    if base_url or os.environ.get("OPENAI_BASE_URL"):
        return "not-needed"  # local servers (vLLM, Ollama, llama.cpp) accept any key
    raise UsageError("set OPENAI_API_KEY, or --base-url for a local OpenAI-compatible server")
