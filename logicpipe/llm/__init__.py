"""The LLM client (client.py), its reply cache (cache.py), and what a request is (request.py).

The client's names load on first use: a stage names requests at import, but only a run that asks a
model needs the client (asyncio, the HTTP stack, the cache)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ..core.errors import LLMError
from .request import Completion, Request, Totals, api_key, endpoint

if TYPE_CHECKING:
    from .client import (
        LLMClient,
        LLMSettings,
        MalformedReply,
        cache_key,
        default_cache_path,
        parse_reply,
        request_body,
        request_headers,
    )

_CLIENT = {"LLMClient", "LLMSettings", "MalformedReply", "cache_key", "default_cache_path", "parse_reply",
           "request_body", "request_headers"}


def __getattr__(name: str) -> Any:
    if name not in _CLIENT:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(".client", __name__), name)


__all__ = ["Completion", "LLMClient", "LLMError", "LLMSettings", "MalformedReply", "Request", "Totals",
           "api_key", "cache_key", "default_cache_path", "endpoint", "parse_reply", "request_body", "request_headers"]
