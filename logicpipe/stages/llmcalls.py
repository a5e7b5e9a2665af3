"""Sending a stage's model requests: one client per batch, records as replies arrive, the budget kept."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar

from ..core.errors import BudgetSpent, LLMError
from ..core.records import Usage
from ..llm import Completion, Request
from .config import ModelOptions
from .context import Gate, RunContext

if TYPE_CHECKING:
    from ..llm.client import LLMSettings, Pace

__all__ = ["BudgetSpent", "Samples", "llm_settings", "send", "send_gated", "usage"]  # BudgetSpent: where it was first

Result = Completion | LLMError
T = TypeVar("T")


class Samples(Generic[T]):
    """K samples per problem, gathered as their replies arrive (formulate's programs, self-consistency's
    answers): `done(problem id, the K values in sample order)` once all K of a problem are back. Sample
    i of a problem is asked under the key `key(id, i)`."""

    def __init__(self, samples: int, done: Callable[[str, list[T]], None]):
        self.samples = samples
        self.done = done
        self._pending: dict[str, dict[int, T]] = {}

    @staticmethod
    def key(pid: str, index: int) -> str:
        return f"{pid}\x1f{index}"

    def add(self, key: str, value: T) -> None:
        pid, index = key.rsplit("\x1f", 1)
        got = self._pending.setdefault(pid, {})
        got[int(index)] = value
        if len(got) == self.samples:
            del self._pending[pid]
            self.done(pid, [got[i] for i in range(self.samples)])


def llm_settings(config: ModelOptions, model: str, cache_path: Path | None = None) -> LLMSettings:
    from ..llm.client import LLMSettings  # the client loads only when a model is asked

    return LLMSettings(model=model, base_url=config.base_url, max_concurrency=config.max_concurrency,
                       max_retries=config.max_retries, timeout=config.llm_timeout,
                       cache_path=cache_path or config.llm_cache)


def send(ctx: RunContext, model: str, requests: list[Request], arrived: Callable[[Request, Result], None]) -> None:
    """Send the requests through one client for `model`, calling `arrived` as each reply ends. A model
    error is charged to the run's budget after its record is written; a fatal one stops the run before."""

    def checked(request: Request, result: Result) -> None:
        if isinstance(result, LLMError) and result.fatal:
            ctx.budget.check(result)
        arrived(request, result)
        if isinstance(result, LLMError):
            ctx.budget.check(result)

    from ..llm.client import Pace, text_bound

    # A formulate record holds the program and every sample: each reply must fit that many times.
    settings = llm_settings(ctx.config, model).model_copy(
        update={"max_text_bytes": text_bound(ctx.config.num_samples + 1)})
    pace = ctx.paces.setdefault(model, Pace(settings.max_concurrency))
    send_gated(settings, ctx.gate, requests, checked, pace)


def send_gated(settings: LLMSettings, gate: Gate | None, requests: list[Request],
               arrived: Callable[[Request, Result], None], pace: Pace | None = None) -> None:
    """Send the requests through one client and the gate (a spending cap, if any), which is charged each
    result before `arrived` sees it; BudgetSpent once those sent are back if the gate held any back
    (at admission, or later, between requests)."""
    if not requests:
        return
    from ..llm.client import LLMClient

    client = LLMClient(settings, pace, gate)
    try:
        client.run(requests, arrived)
    finally:
        client.close()


def usage(results: list[Result]) -> Usage:
    done = [r for r in results if isinstance(r, Completion)]
    return Usage(prompt_tokens=sum(r.prompt_tokens for r in done),
                 completion_tokens=sum(r.completion_tokens for r in done),
                 calls=len(results), cached_calls=sum(r.cached and not r.batch for r in done),
                 batch_calls=sum(r.batch for r in done))
