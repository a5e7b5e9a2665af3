"""Typed stage records, one pydantic model per JSONL line."""

from __future__ import annotations

from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = 1


class ErrorCategory(str, Enum):
    parse = "parse"
    execution = "execution"
    timeout = "timeout"
    no_answer = "no_answer"
    llm = "llm"
    no_program = "no_program"


# Categories after which the solver ran the program to the end: Logic-LM counts these as executed.
EXECUTED_CATEGORIES = {None, ErrorCategory.no_answer}


class StageError(BaseModel):
    model_config = ConfigDict(extra="forbid")
    category: ErrorCategory
    message: str


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid")
    schema_version: int = SCHEMA_VERSION
    id: str
    error: StageError | None = None


class Problem(BaseModel):
    model_config = ConfigDict(extra="ignore")
    id: str
    context: str
    question: str
    options: list[str] = Field(default_factory=list)
    answer: str | None = None


class Usage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    cached_calls: int = 0


class FormulateRecord(Record):
    dataset: str
    program: str | None = None
    source: str
    samples: list[str] = Field(default_factory=list)
    usage: Usage | None = None
    round: int = 0


class SolveRecord(Record):
    dataset: str
    solver: str
    verdict: str | None = None
    seconds: float = 0.0
    explanation: dict[str, Any] | None = None
    round: int = 0


class InterpretRecord(Record):
    predicted: str | None = None
    usage: Usage | None = None
    executed: bool
    final: str | None = None
    backup: str | None = None
    round: int = 0


class EvaluateRecord(Record):
    gold: str | None
    predicted: str | None
    final: str | None
    executed: bool
    correct_executed: bool
    correct: bool
