"""The spending cap of every model command (--max-cost, --max-tokens-total; optimize's --max-calls):
the gate (gate.Gate) every request of a run passes, and its ledger, FOLDER/spent.json."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..core.errors import LLMError
from .cache import Cache
from .client import cache_key, default_cache_path
from .ledger import LEDGER, read_ledger, write_ledger
from .request import Completion, Request, endpoint

Result = Completion | LLMError


class Caps(Protocol):
    """What the cap reads of a command's options (stages.config.ModelOptions has it all)."""

    max_cost: float | None
    max_tokens_total: int | None
    llm_cache: Path | None
    base_url: str | None
    out: Path

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float | None: ...


@dataclass
class Spend:
    """What the requests of one step cost."""

    calls: int = 0
    cached_calls: int = 0
    sent: int = 0  # requests that reached the server (cached ones did not): what --max-calls counts
    prompt_tokens: int = 0
    completion_tokens: int = 0


class Budget:
    """The spending cap of every model command, the one gate (logicpipe.llm.gate.Gate): --max-calls
    (optimize), --max-cost and --max-tokens-total (optimize, run, the stage commands, baseline, compare,
    kb ask, kb validate). Requests whose reply is cached always pass; others pass while calls, cost and
    tokens are left: a batch that does not fully pass at admission, or a request that `open` refuses
    just before it would be sent, stops the run once what was sent is back. `open` counts the requests
    in flight at the mean cost of those sent so far, so that a cap reached while many are in flight is
    passed by about one request, not by all of them; until a reply says what a request costs, one goes
    at a time. What was sent is kept in FOLDER/spent.json after every reply, so a run killed or stopped
    mid-way still counts what it spent when it is resumed, and the cap is over every run into the
    folder: a re-run with a higher cap spends only the difference."""

    LEDGER = LEDGER
    held_as = "not sent"

    def __init__(self, config: Caps, folder: Path | None = None, cache_path: Path | None = None,
                 max_calls: int | None = None, ledger: bool = True):
        """`config` gives the caps, the prices and the endpoint; `folder` holds the ledger (default
        config.out; read on first use; --overwrite keeps it); `cache_path` is the reply
        cache the requests go through (default config's); `ledger` False: no ledger, the cap is this
        command's alone (one question, no folder)."""
        self.config = config
        self.max_calls = max_calls
        self.cache_path = cache_path or config.llm_cache or default_cache_path()
        self.step = Spend()
        self._total: Spend | None = None  # paid requests of every run into the folder (cached ones are free)
        self._batches: list[str] = []  # the batches the folder's ledger counts (read with the total)
        self.replies = 0  # paid replies this run received (a run that got none may leave a new OUT unmade)
        self.maybe_paid = 0  # failed requests the server may have worked on (and billed): timeouts, 5xx, ...
        # Called once per model with its first reply (cached ones too): options.json then records it.
        self.on_answer: Callable[[str], None] = lambda model: None
        self._asking: str | None = None
        # False while the final test evaluation runs: it is outside --max-calls/--max-cost (a spent
        # budget must still leave an honest score), and only counted.
        self.bounded = True
        self._answered: set[str] = set()
        self._lock = threading.Lock()
        self._in_flight = 0  # requests `open` let go whose result has not been charged
        self.blind = False  # a paid reply came with no usage: nothing more is sent under a cap
        self._near = False  # open() held a request back: the next one would pass the cap
        self.base_url = endpoint(config.base_url)
        self._ledger = (folder if folder is not None else config.out) / self.LEDGER if ledger else None

    @property
    def total(self) -> Spend:
        if self._total is None:
            saved = read_ledger(self._ledger.parent) if self._ledger is not None else None
            self._total = Spend() if saved is None else Spend(sent=saved["sent"], prompt_tokens=saved["prompt_tokens"],
                                                             completion_tokens=saved["completion_tokens"])
            self._batches = [] if saved is None else saved["batches"]  # counted in the total; kept on writing
        return self._total

    @property
    def sent(self) -> int:
        return self.total.sent

    @property
    def cost(self) -> float:
        return self.config.cost(self.total.prompt_tokens, self.total.completion_tokens) or 0.0

    @property
    def tokens(self) -> int:
        return self.total.prompt_tokens + self.total.completion_tokens

    def _reached(self, in_flight: int = 0) -> bool:
        """Whether --max-cost or --max-tokens-total is reached, counting `in_flight` requests at the mean
        of those sent so far."""
        sent = max(self.total.sent, 1)
        cap_cost, cap_tokens = self.config.max_cost, self.config.max_tokens_total
        return ((cap_cost is not None and self.cost * (1 + in_flight / sent) >= cap_cost)
                or (cap_tokens is not None and self.tokens * (1 + in_flight / sent) >= cap_tokens))

    def _capped(self) -> bool:
        return self.config.max_cost is not None or self.config.max_tokens_total is not None

    def _unpriced(self) -> bool:
        return self._capped() and not self.replies and not self.tokens

    def left(self) -> int | None:
        """Requests that may still be sent (None: no limit on the count)."""
        if self._reached():
            return 0
        if self.max_calls is None:
            return None
        return max(0, self.max_calls - self.sent)

    def resume(self) -> str:
        """What is kept and what a user does to finish what the cap held back."""
        # Without a ledger the command has no folder (one question): it wrote no record to keep.
        kept = "finished records are kept; " if self._ledger is not None else "no answer is written; "
        if self.blind:
            return f"{kept}re-run without the cap to finish (replies already paid for come from the cache)"
        return f"{kept}re-run with a higher cap to finish (replies already paid for come from the cache)"

    def spent(self) -> str | None:
        """Why nothing more may be sent, or None."""
        if self.blind:
            return ("the server's replies say nothing of the tokens they used, so --max-cost or --max-tokens-total "
                    "cannot be kept")
        if self.config.max_cost is not None and self.cost >= self.config.max_cost:
            return f"--max-cost {self.config.max_cost:g} reached (spent {self.cost:.4f})"
        if self.config.max_tokens_total is not None and self.tokens >= self.config.max_tokens_total:
            return f"--max-tokens-total {self.config.max_tokens_total} reached ({self.tokens} tokens used)"
        if self.max_calls is not None and self.sent >= self.max_calls:
            return f"--max-calls {self.max_calls} reached"
        if self._near or self._reached(self._in_flight):
            caps = [f"--max-cost {self.config.max_cost:g} (spent {self.cost:.4f})" if self.config.max_cost is not None
                    else "", f"--max-tokens-total {self.config.max_tokens_total} ({self.tokens} tokens used)"
                    if self.config.max_tokens_total is not None else ""]
            return (f"{' and '.join(c for c in caps if c)} would be passed by the next request (counted at the mean "
                    "of those sent)")
        return None

    def open(self) -> bool | None:
        """Whether one more paid request may go now (asked just before each is sent); None: not before
        a request in flight is back. With --max-cost or --max-tokens-total and no reply yet (in this run
        or the ledger), nothing says what a request costs: one goes at a time until one comes back,
        else the first window of --max-concurrency requests would pass the cap unchecked."""
        if not self.bounded:
            return True
        with self._lock:
            if self.blind:
                return False
            if self._in_flight and self._unpriced():
                return None
            if self._reached(self._in_flight):
                self._near = True  # said by spent() once those in flight are back
                return False
            self._in_flight += 1
            return True

    def admit(self, model: str, requests: list[Request]) -> list[Request]:
        # Every request in flight is to this model: the pipeline and the optimiser never send at once.
        self._asking = model
        room = self.left() if self.bounded else None
        if room is None:
            return requests
        # Opened per batch: the pipeline sends from more than one thread, and SQLite handles stay in theirs.
        cache = Cache(self.cache_path)
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

    def failure(self, key: str) -> LLMError | None:
        return None

    def batched(self, source: str) -> bool:
        return False

    def charge(self, result: Result) -> None:
        self.step.calls += 1
        if isinstance(result, Completion) and self._asking is not None:
            with self._lock:
                first = self._asking not in self._answered
                self._answered.add(self._asking)
            if first:
                self.on_answer(self._asking)
        if isinstance(result, Completion) and result.cached:
            self.step.cached_calls += 1
            return
        # A failed request went out too (and may have been paid for); a phased one that failed part-way
        # carries the tokens of the phases that came back.
        tokens = (result.prompt_tokens, result.completion_tokens)
        with self._lock:
            if isinstance(result, Completion) and tokens == (0, 0) and self._capped():
                self.blind = True  # the server says nothing of usage: the cap cannot be kept
            self._in_flight = max(0, self._in_flight - 1)
            self.replies += isinstance(result, Completion)
            self.maybe_paid += isinstance(result, LLMError) and not _unbilled(result)
            for spend in (self.step, self.total):
                spend.sent += 1
                spend.prompt_tokens += tokens[0]
                spend.completion_tokens += tokens[1]
            self._save()

    def stop(self) -> None:
        pass

    def cancelled(self) -> None:
        with self._lock:
            self._in_flight = max(0, self._in_flight - 1)

    def _save(self) -> None:
        if self._ledger is None:
            return
        total = self.total
        # The cost at this run's prices (those --max-cost counts with); None without.
        write_ledger(self._ledger.parent, total.sent, total.prompt_tokens, total.completion_tokens,
                     self.config.cost(total.prompt_tokens, total.completion_tokens), self._batches)

    def new_step(self) -> Spend:
        """Close the step's account and open the next one."""
        done, self.step = self.step, Spend()
        return done


def _unbilled(error: LLMError) -> bool:
    """A failure no server worked on: refused (bad key, unknown model) or never connected."""
    import openai  # loaded by the client already; imported here as the client does

    cause = error.__cause__
    return error.fatal or (isinstance(cause, openai.APIConnectionError)
                           and not isinstance(cause, openai.APITimeoutError))
