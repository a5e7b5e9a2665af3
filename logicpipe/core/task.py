"""What is being solved: a dataset split, its formalism and solver, its answer space and prompts."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

AnswerSpace = Literal["options", "truth", "free"]


class Task(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    dataset: str  # registry key, also the name of the run's directory
    name: str  # the dataset's own spelling (its folder in Logic-LM's layout)
    split: str
    solver: str
    # options: an option letter; truth: True/False/Unknown; free: text (the knowledge-base mode)
    answer_space: AnswerSpace = "options"
    closed_world: bool = False  # an unproved statement is False (ProntoQA), not Unknown
    timeout: float = 30.0  # seconds per solver call unless the run says otherwise
    prompt: str  # id of the formulate prompt
    # For a user's task file: a digest of its definition (source, fields, answer space, ...), recorded in
    # run.json so a changed file never resumes a directory made from the old one.
    definition: str | None = None
