"""The LLM client (client.py), its reply cache (cache.py), and what a request is (request.py).

The client's names load on first use: a stage names requests at import, but only a run that asks a
model needs the client (asyncio, the HTTP stack, the cache)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.errors import LLMError
from ..core.lazy import lazy_names
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

_CLIENT = {name: "client" for name in ("LLMClient", "LLMSettings", "MalformedReply", "cache_key",
                                        "default_cache_path", "parse_reply", "request_body", "request_headers")}

__getattr__ = lazy_names(__name__, _CLIENT)


__all__ = ["Completion", "LLMClient", "LLMError", "LLMSettings", "MalformedReply", "Request", "Totals",
           "api_key", "cache_key", "default_cache_path", "endpoint", "parse_reply", "request_body", "request_headers"]
