"""Sending a stage's model requests: one client per batch, records as replies arrive, the budget kept."""

from __future__ import annotations

from collections.abc import Callable

from ..core.records import Usage
from ..errors import LLMError, RunStopped
from ..llm import Completion, LLMClient, LLMSettings, Request
from .config import RunConfig
from .context import RunContext

Result = Completion | LLMError


def llm_settings(config: RunConfig, model: str) -> LLMSettings:
    return LLMSettings(model=model, base_url=config.base_url, max_concurrency=config.max_concurrency,
                       max_retries=config.max_retries, timeout=config.llm_timeout, cache_path=config.llm_cache)


def send(ctx: RunContext, model: str, requests: list[Request], arrived: Callable[[Request, Result], None]) -> None:
    """Send the requests through one client for `model`, calling `arrived` as each reply ends. A model
    error is charged to the run's budget after its record is written; a fatal one stops the run before."""
    if not requests:
        return
    allowed = ctx.gate.admit(model, requests) if ctx.gate is not None else requests

    def checked(request: Request, result: Result) -> None:
        if ctx.gate is not None:
            ctx.gate.charge(result)
        if isinstance(result, LLMError) and result.fatal:
            ctx.budget.check(result)
        arrived(request, result)
        if isinstance(result, LLMError):
            ctx.budget.check(result)

    client = LLMClient(llm_settings(ctx.config, model))
    try:
        client.run(allowed, checked)
    finally:
        client.close()
    if len(allowed) < len(requests):
        raise BudgetSpent(f"the model budget is spent: {len(requests) - len(allowed)} requests not sent; "
                          "finished records are kept")


class BudgetSpent(RunStopped):
    """A gate held requests back: the run stops between requests, with what arrived written."""


def usage(results: list[Result]) -> Usage:
    done = [r for r in results if isinstance(r, Completion)]
    return Usage(prompt_tokens=sum(r.prompt_tokens for r in done),
                 completion_tokens=sum(r.completion_tokens for r in done),
                 calls=len(results), cached_calls=sum(r.cached for r in done))
