"""Batch driver for the model-backed kb modes: one record per input, resumable after a kill.

Each input runs as a generator that yields model Requests and receives their replies; the driver
sends every pending request of a wave through one LLMClient.run (concurrent, cached), advances the
generators as replies arrive, and appends a record the moment its generator returns.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from string import Template
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict

from ..core.errors import DataError, ProgramParseError
from ..core.jsonl import Appender, iter_json_lines, read_records
from ..core.records import Usage
from ..llm import Completion, LLMClient, LLMError, Request
from .knowledge import Percept, parse_percept
from .terms import Operators, Term, parse_goals

PROMPTS = Path(__file__).with_name("prompts")

Reply = Completion | LLMError
Flow = Generator[Request, Reply, Any]  # returns the input's record
R = TypeVar("R", bound=BaseModel)


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    temperature: float = 0.0
    max_tokens: int = 1024


@dataclass
class Input:
    id: str
    text: str
    percepts: list[Percept] = field(default_factory=list)  # this input's real-time values


def prompt(name: str, **values: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": Template((PROMPTS / f"{name}.txt").read_text()).substitute(values)}]


def code_block(text: str) -> str:
    """The body of the first fenced block, else the whole reply."""
    match = re.search(r"```[a-zA-Z]*\n(.*?)```", text, re.DOTALL)
    return match.group(1) if match else text


def read_goals(text: str, ops: Operators = ()) -> tuple[list[Term], list[str]]:
    """Goals from a model's reply: the whole block if it parses, else line by line (models often drop
    the full stops), so one bad line costs only itself. Returns (terms, "line -- why" for the rest)."""
    try:
        return parse_goals(text, ops), []
    except ProgramParseError as whole:
        lines = [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("%")]
        if len(lines) < 2:
            return [], [f"{text.strip()} -- {whole}"]
    terms: list[Term] = []
    errors: list[str] = []
    for line in lines:
        try:
            terms += parse_goals(line, ops)
        except ProgramParseError as exc:
            errors.append(f"{line} -- {exc}")
    return terms, errors


def add_usage(usage: Usage, reply: Reply) -> None:
    if isinstance(reply, Completion):
        usage.calls += 1
        usage.cached_calls += int(reply.cached)
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


def run_flows(client: LLMClient, flows: Iterable[tuple[str, Flow]], emit: Callable[[Any], None]) -> None:
    """Drive the flows to completion; `emit` gets each finished record (in completion order)."""
    waiting: dict[str, tuple[Flow, Request]] = {}

    def advance(key: str, flow: Flow, reply: Reply | None) -> None:
        try:
            request = next(flow) if reply is None else flow.send(reply)
        except StopIteration as done:
            emit(done.value)
            return
        request.key = key
        waiting[key] = (flow, request)

    in_flight: dict[str, Flow] = {}

    def on_result(request: Request, reply: Reply) -> None:
        advance(request.key, in_flight.pop(request.key), reply)

    for key, flow in flows:
        advance(key, flow, None)
    while waiting:
        requests = []
        for key, (flow, request) in waiting.items():
            in_flight[key] = flow
            requests.append(request)
        waiting.clear()
        client.run(requests, on_result)


def run_batch(client: LLMClient, inputs: list[Input], out: Path, model: type[R],
              make_flow: Callable[[Input], Flow]) -> tuple[int, int]:
    """Skip inputs already in `out`, run the rest, append each record as it finishes.
    Returns (records now in out, records written by this run)."""
    done = {record.id for record in read_records(out, model)}  # type: ignore[attr-defined]
    pending = [item for item in inputs if item.id not in done]
    written = 0
    with Appender(out) as appender:
        def emit(record: BaseModel) -> None:
            nonlocal written
            appender.write(record)
            written += 1

        run_flows(client, ((item.id, make_flow(item)) for item in pending), emit)
    return len(done) + written, written
