"""Driver for the model-backed kb modes: each input runs as a generator that yields model Requests and
receives their replies; the driver sends every pending request of a wave through one LLMClient.run
(concurrent, cached), advances the generators as replies arrive, and emits a record the moment its
generator returns. batch.py holds a batch's run folder around it."""

from __future__ import annotations

import re
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..core.errors import DataError, ProgramParseError
from ..core.jsonl import iter_json_lines
from ..core.records import Record, Usage
from ..llm import Completion, LLMClient, LLMError, Request
from ..runtime.folder import ErrorBudget
from .knowledge import Percept, parse_percept
from .terms import Term

Reply = Completion | LLMError
Flow = Generator[Request, Reply, Any]  # returns the input's record


class KBRecord(Record):
    """What a kb batch writes per input: ask's and validate's records share these fields."""

    percepts: list[str] = Field(default_factory=list)  # the real-time values the proofs saw
    usage: Usage = Field(default_factory=Usage)


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    temperature: float = 0.0
    max_tokens: int = 1024


@dataclass
class Input:
    id: str
    text: str
    percepts: list[Percept] = field(default_factory=list)  # this input's real-time values


def code_block(text: str) -> str:
    """The body of the first fenced block, else the whole reply."""
    match = re.search(r"```[a-zA-Z]*\n(.*?)```", text, re.DOTALL)
    return match.group(1) if match else text


def read_goals(text: str, read: Callable[[str], list[Term]]) -> tuple[list[Term], list[str]]:
    """Goals from a model's reply, read by `read` (KnowledgeBase.read, SWI-Prolog's reader): the whole
    block if it parses, else line by line (models often drop the full stops), so one bad line costs
    only itself. Returns (terms, "line -- why" for the rest)."""
    try:
        return read(text), []
    except ProgramParseError as whole:
        lines = [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("%")]
        if len(lines) < 2:
            return [], [f"{text.strip()} -- {whole}"]
    terms: list[Term] = []
    errors: list[str] = []
    for line in lines:
        try:
            terms += read(line)
        except ProgramParseError as exc:
            errors.append(f"{line} -- {exc}")
    return terms, errors


def add_usage(usage: Usage, reply: Reply) -> None:
    if isinstance(reply, Completion):
        usage.calls += 1
        usage.cached_calls += int(reply.cached and not reply.batch)
        usage.batch_calls += int(reply.batch)
        usage.prompt_tokens += reply.prompt_tokens
        usage.completion_tokens += reply.completion_tokens


def read_inputs(path: Path, field: str) -> list[Input]:
    """JSONL with an `id` and the text field, and optionally `percepts` ({"p_hour": 11}: the values when
    this input was asked); ids must be unique, since output is keyed by them."""
    inputs: list[Input] = []
    seen: set[str] = set()
    for number, raw in iter_json_lines(path):
        if not isinstance(raw, dict) or not isinstance(raw.get(field), str) or "id" not in raw:
            raise DataError(f"{path}:{number}: expected an object with \"id\" and \"{field}\"")
        key = str(raw["id"])
        if key in seen:
            raise DataError(f"{path}:{number}: duplicate id {key!r}")
        seen.add(key)
        percepts = raw.get("percepts") or {}
        if not isinstance(percepts, dict):
            raise DataError(f"{path}:{number}: \"percepts\" must be an object of name: value")
        inputs.append(Input(key, raw[field], [parse_percept(f"{name}={value}", f"{path}:{number}")
                                              for name, value in percepts.items()]))
    return inputs


def run_flows(client: LLMClient, flows: Iterable[tuple[str, Flow]], emit: Callable[[Any], None],
              failed: Callable[[str, Exception], Any] | None = None, budget: ErrorBudget | None = None) -> None:
    """Drive the flows to completion; `emit` gets each finished record (in completion order). A flow
    that raises ends there: `failed(key, exc)` makes its record (an error record), or without `failed`
    the exception propagates. Model errors are charged to `budget` as `logicpipe run` charges them: a
    fatal one stops the run before its record is written (a resume redoes it), others after."""
    waiting: dict[str, tuple[Flow, Request]] = {}

    def advance(key: str, flow: Flow, reply: Reply | None) -> None:
        try:
            request = next(flow) if reply is None else flow.send(reply)
        except StopIteration as done:
            emit(done.value)
            return
        except Exception as exc:  # noqa: BLE001 - one input's failure is its record, never the batch's
            if failed is None:
                raise
            emit(failed(key, exc))
            return
        request.key = key
        waiting[key] = (flow, request)

    in_flight: dict[str, Flow] = {}

    def on_result(request: Request, reply: Reply) -> None:
        error = reply if isinstance(reply, LLMError) else None
        if budget is not None and error is not None and error.fatal:
            budget.check(error)
        advance(request.key, in_flight.pop(request.key), reply)
        if budget is not None and error is not None:
            budget.check(error)

    for key, flow in flows:
        advance(key, flow, None)
    while waiting:
        requests = []
        for key, (flow, request) in waiting.items():
            in_flight[key] = flow
            requests.append(request)
        waiting.clear()
        client.run(requests, on_result)
