"""The LLM client (client.py) and its reply cache (cache.py)."""

from .client import (
    Completion,
    LLMClient,
    LLMError,
    LLMSettings,
    MalformedReply,
    Request,
    Totals,
    api_key,
    cache_key,
    default_cache_path,
    endpoint,
    parse_reply,
    request_body,
    request_headers,
)

__all__ = ["Completion", "LLMClient", "LLMError", "LLMSettings", "MalformedReply", "Request", "Totals",
           "api_key", "cache_key", "default_cache_path", "endpoint", "parse_reply", "request_body", "request_headers"]
