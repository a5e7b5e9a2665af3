"""The gate every model request of a run passes (its own module: the stages name it without loading
the client and asyncio)."""

from __future__ import annotations

from typing import Protocol

from ..core.errors import LLMError
from .request import Completion, Request


class Gate(Protocol):
    """What a run's model requests may be sent: a spending cap (llm/budget.py Budget: --max-calls,
    --max-cost, --max-tokens-total), a batch file (llm/batchfile.py BatchExport: --batch-export) or a
    provider's batch API (llm/batchapi.py BatchAPI: --batch)."""

    # What became of the requests it held back, as the stop line says it ("not sent", ...).
    held_as: str

    def admit(self, model: str, requests: list[Request]) -> list[Request]:
        """The requests that may be sent now (those already cached cost nothing); if fewer than all,
        the sender stops the run once they are back."""
        ...

    def failure(self, key: str) -> LLMError | None:
        """The error of a request (by cache key) the gate admitted and that failed for good where the
        gate had it answered (a provider's batch); None for any other."""
        ...

    def batched(self, source: str) -> bool:
        """Whether a cached reply stored from the batch `source` (a batch id, an output file) was paid
        for by this run's batches: it is then counted as a batch call, not as a cached one."""
        ...

    def charge(self, result: Completion | LLMError) -> None:
        ...

    def cancelled(self) -> None:
        """A request `open` let go was cancelled (the run is stopping) before it had a result to charge."""
        ...

    def open(self) -> bool | None:
        """Whether one more request the cache cannot answer may be sent now (asked just before each):
        False stops the run between requests, once those in flight are back; None: not yet, ask again
        once a request in flight has been charged (a cap that has no cost per request to go by yet)."""
        ...

    def spent(self) -> str | None:
        """Why nothing more may be sent (the cap reached and what was spent), or None."""
        ...

    def resume(self) -> str:
        """What is kept and what a user does to finish what was held back."""
        ...

    def stop(self) -> None:
        """The run is stopping (Ctrl-C, the solving side failed): a thread waiting in `admit` (on a
        provider's batch) gives up at once rather than wait for the batch to end."""
        ...
