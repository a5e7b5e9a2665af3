"""The optimiser's own model requests (loss, gradient, optimize, structure), through the spending cap
(llm/budget.py) that every request of an optimisation run passes, the pipeline's included."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from ..core.errors import LLMError, RunStopped
from ..llm import Request
from ..llm.budget import Budget, Result, Spend, read_ledger
from ..prompts import Prompt, PromptSet
from ..stages.llmcalls import llm_settings, send_gated
from .config import OPTIMIZER_PROMPTS, OptimizeConfig

__all__ = ["Budget", "Result", "Spend", "read_ledger"]  # where the optimiser's modules import them


def template(config: OptimizeConfig, prompt_id: str) -> Prompt:
    """One of OPTIMIZER_PROMPTS: the --prompts folder's file if it has one, else the shipped one."""
    return PromptSet(config.prompts).get(prompt_id)


def template_hashes(config: OptimizeConfig) -> dict[str, str]:
    return PromptSet(config.prompts).identity(*OPTIMIZER_PROMPTS)


def ask(config: OptimizeConfig, budget: Budget, requests: list[Request],
        arrived: Callable[[Request, Result], None]) -> None:
    """Send the optimiser's requests (to --optimizer-model) through the cached client and the budget; a
    fatal model error (bad key, unknown model) stops the run."""

    def checked(request: Request, result: Result) -> None:
        if isinstance(result, LLMError) and result.fatal:
            raise model_stop(result)
        arrived(request, result)

    send_gated(llm_settings(config, config.judge, config.cache_path), budget, requests, checked)


def model_stop(error: LLMError) -> RunStopped:
    """A model failure that ends the run (a bad key, an unknown model, an endpoint that keeps failing),
    in optimize's own options."""
    return RunStopped(f"the model failed ({error}); check --model, --optimizer-model, --base-url and the API key, "
                      "then re-run the same command to go on (what was answered is cached)")


_JSON = re.compile(r"\{.*\}", re.S)


def reply_json(text: str, reply: str) -> object:
    """The JSON object a judge or optimiser reply holds (from its first '{' to its last '}');
    ValueError names the `reply` ("the judge's reply", "the reply") and why it is unusable."""
    found = _JSON.search(text)
    if found is None:
        raise ValueError(f"{reply} holds no JSON object")
    try:
        return json.loads(found.group(0))
    except ValueError as exc:
        raise ValueError(f"{reply} is not JSON: {exc}") from None
