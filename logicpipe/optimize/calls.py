"""The optimiser's own model requests (loss, gradient, optimize, structure) and the spending limit that
every request of an optimisation run passes, the pipeline's included."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import LLMError
from ..llm import Completion, LLMClient, LLMSettings, Request, cache_key
from ..llm.cache import Cache
from ..stages.llmcalls import BudgetSpent
from .config import OptimizeConfig

Result = Completion | LLMError


@dataclass
class Spend:
    """What the requests of one step cost."""

    calls: int = 0
    cached_calls: int = 0
    sent: int = 0  # requests that reached the server (cached ones did not): what --max-calls counts
    prompt_tokens: int = 0
    completion_tokens: int = 0


class Budget:
    """--max-calls and --max-cost: requests whose reply is cached always pass; others pass while calls and
    cost are left. A batch that does not fully pass stops the run once what was sent is back (a gate of
    logicpipe.stages.context.Gate)."""

    def __init__(self, config: OptimizeConfig, sent_before: int = 0, cost_before: float = 0.0):
        self.config = config
        self.sent_before = sent_before  # requests sent by earlier runs of this optimisation (steps.jsonl)
        self.cost_before = cost_before
        self.step = Spend()
        self.base_url = config.base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"

    @property
    def sent(self) -> int:
        return self.sent_before + self.step.sent

    @property
    def cost(self) -> float:
        return self.cost_before + (self.config.cost(self.step.prompt_tokens, self.step.completion_tokens) or 0.0)

    def left(self) -> int | None:
        """Requests that may still be sent (None: no limit on the count)."""
        if self.config.max_cost is not None and self.cost >= self.config.max_cost:
            return 0
        if self.config.max_calls is None:
            return None
        return max(0, self.config.max_calls - self.sent)

    def spent(self) -> str | None:
        """Why nothing more may be sent, or None."""
        if self.config.max_cost is not None and self.cost >= self.config.max_cost:
            return f"--max-cost {self.config.max_cost:g} reached (spent {self.cost:.4f})"
        if self.config.max_calls is not None and self.sent >= self.config.max_calls:
            return f"--max-calls {self.config.max_calls} reached"
        return None

    def admit(self, model: str, requests: list[Request]) -> list[Request]:
        room = self.left()
        if room is None:
            return requests
        # Opened per batch: the pipeline sends from more than one thread, and SQLite handles stay in theirs.
        cache = Cache(self.config.cache_path)
        allowed = []
        try:
            for request in requests:
                if cache.get(cache_key(model, self.base_url, request)) is not None:
                    allowed.append(request)
                elif room > 0:
                    allowed.append(request)
                    room -= 1
        finally:
            cache.close()
        return allowed

    def charge(self, result: Result) -> None:
        self.step.calls += 1
        if isinstance(result, LLMError):
            self.step.sent += 1  # it went out (and may have been paid for), though nothing came back
            return
        if result.cached:
            self.step.cached_calls += 1
            return
        self.step.sent += 1
        self.step.prompt_tokens += result.prompt_tokens
        self.step.completion_tokens += result.completion_tokens

    def new_step(self) -> Spend:
        """Close the step's account: its spend is now part of what earlier steps sent."""
        done = self.step
        self.sent_before += done.sent
        self.cost_before += self.config.cost(done.prompt_tokens, done.completion_tokens) or 0.0
        self.step = Spend()
        return done


def ask(config: OptimizeConfig, budget: Budget, requests: list[Request],
        arrived: Callable[[Request, Result], None]) -> None:
    """Send the optimiser's requests (to --optimizer-model) through the cached client and the budget; a
    fatal model error (bad key, unknown model) stops the run."""
    if not requests:
        return
    model = config.judge
    allowed = budget.admit(model, requests)

    def charged(request: Request, result: Result) -> None:
        budget.charge(result)
        if isinstance(result, LLMError) and result.fatal:
            raise result
        arrived(request, result)

    settings = LLMSettings(model=model, base_url=config.base_url, max_concurrency=config.max_concurrency,
                           max_retries=config.max_retries, timeout=config.llm_timeout, cache_path=config.cache_path)
    client = LLMClient(settings)
    try:
        client.run(allowed, charged)
    finally:
        client.close()
    if len(allowed) < len(requests):
        raise BudgetSpent(f"{budget.spent() or 'the model budget is spent'}: "
                          f"{len(requests) - len(allowed)} requests not sent")
