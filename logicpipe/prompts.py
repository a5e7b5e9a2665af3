"""Prompt files (`prompts/` at the project root) rendered into chat messages, and answer extraction."""

from __future__ import annotations

import os
import re
from functools import cache
from pathlib import Path

from .errors import PrerequisiteError
from .records import Problem

ENV = "LOGICPIPE_PROMPTS"
_SPLIT = "=== user ==="
_CHOICE = re.compile(r"correct (?:option|answer) is:?\s*\(?([A-Z])\b", re.IGNORECASE)
_FENCE = re.compile(r"```[\w-]*\n(.*?)```", re.S)


def prompts_dir() -> Path:
    chosen = os.environ.get(ENV)
    folder = Path(chosen) if chosen else Path(__file__).resolve().parent.parent / "prompts"
    if not folder.is_dir():
        raise PrerequisiteError(f"prompt folder {folder} not found; set {ENV} to the project's prompts/ folder")
    return folder


@cache
def _template(folder: Path, name: str) -> tuple[str, str]:
    path = folder / f"{name}.txt"
    if not path.exists():
        raise PrerequisiteError(f"prompt {path} not found")
    system, sep, user = path.read_text().partition(_SPLIT)
    if not sep:
        raise PrerequisiteError(f"prompt {path} has no '{_SPLIT}' line")
    return system.strip(), user.strip() + "\n"


def render(name: str, **fields: str) -> list[dict[str, str]]:
    system, user = _template(prompts_dir(), name)
    for key, value in fields.items():
        user = user.replace("{{" + key + "}}", value)
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def problem_fields(problem: Problem) -> dict[str, str]:
    return {"context": problem.context, "question": problem.question, "options": "\n".join(problem.options)}


def guide(solver: str) -> str:
    path = prompts_dir() / f"guide-{solver}.txt"
    return path.read_text().strip() if path.exists() else ""


def extract_program(text: str) -> str:
    """The program inside a reply: the first fenced block if there is one, minus a leading 'Program:'."""
    fenced = _FENCE.search(text)
    body = fenced.group(1) if fenced else text
    body = body.strip()
    if body.lower().startswith("program:"):
        body = body[len("program:"):].strip()
    return body + "\n"


def extract_choice(text: str, letters: list[str]) -> str | None:
    """The option letter a Standard or CoT reply settles on (its last 'correct option is: X')."""
    found = [m.group(1).upper() for m in _CHOICE.finditer(text)]
    found = [f for f in found if f in letters]
    return found[-1] if found else None
