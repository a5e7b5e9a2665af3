"""Grammar-constrained decoding (--constrain): the grammar of a solver's language, in the form the
endpoint takes, and the one clear stop when an endpoint refuses the field.

llama.cpp servers take GBNF as `"grammar"`. vLLM takes `"guided_grammar"`; its xgrammar backend reads
the same GBNF notation (EBNF with a `root` rule), so the GBNF text is sent there unchanged.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Literal

from ..core.errors import LLMError, RunStopped
from . import declared
from .grammars import load

Format = Literal["gbnf", "vllm"]
FIELDS: dict[str, str] = {"gbnf": "grammar", "vllm": "guided_grammar"}


def grammar_for(solver: str, max_tokens: int | None = None) -> str:
    """The decoding form: bounded repetitions sized to max_tokens, nothing after the last section
    (grammars/__init__.py)."""
    return load(solver, decoding=True, max_tokens=max_tokens)


@dataclass(frozen=True)
class Constraint:
    """What --constrain sends with a request: the grammar of its reply, or of the first of its phases
    with `then` giving each next phase's grammar from the text so far (declared.py)."""

    grammar: str
    then: Callable[[str], str | None] | None = None


def constraint_for(solver: str, max_tokens: int | None = None) -> Constraint:
    if declared.phased(solver):
        return Constraint(declared.first_grammar(solver, max_tokens),
                          partial(declared.next_grammar, solver, max_tokens))
    return Constraint(grammar_for(solver, max_tokens))


def field_for(form: Format) -> str:
    return FIELDS[form]


def grammar_hash(solver: str, max_tokens: int | None = None) -> str:
    text = grammar_for(solver, max_tokens)
    if declared.phased(solver):
        text += f"\n# phases: {declared.VERSION}\n"
    return hashlib.sha256(text.encode()).hexdigest()


def check_refusal(error: LLMError, form: Format) -> None:
    """A constrained request answered with HTTP 400 is refused for its grammar field (servers name it,
    or say the grammar does not parse): every request of the run would fail the same way, so the run
    stops here, never falling back to unconstrained decoding."""
    message = str(error)
    if message.startswith("HTTP 400"):
        raise RunStopped(f"the endpoint refused a constrained request (the '{field_for(form)}' field that "
                         f"--constrain sends with --constrain-format {form}): {message}; run without "
                         "--constrain, or pick the --constrain-format this server takes (gbnf: llama.cpp, "
                         "vllm: vLLM)")
