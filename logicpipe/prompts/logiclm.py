"""Logic-LM's own prompts (`--prompts logic-lm`): the formulation files (models/prompts/<Dataset>.txt)
and self-correction files (self-correct-<Dataset>.txt) of the pinned Logic-LM commit. They are
downloaded once, checked against their sha256 and cached exactly as the data is (data/fetch.py,
data/source.json); logicpipe never ships a copy.

Each file is one completion-style text: an instruction, worked examples separated by lines of dashes,
and the problem last. Logic-LM sent it to chat models as the only message of the conversation (a
single user message, models/utils.py `chat_generate`) with the dashes as the stop sequence, and
logicpipe does the same, so a user's model sees exactly what gpt-4 saw in the paper."""

from __future__ import annotations

import re
from collections.abc import Mapping

from ..core.errors import PrerequisiteError, UsageError
from ..data import registry
from ..data.fetch import cached_file

PAPER = "logic-lm"  # the --prompts value that selects these prompts
STOP = "------"  # Logic-LM's --stop_words default (models/logic_program.py, models/self_refinement.py)
# Our formulate prompt ids -> Logic-LM's dataset names, which name its prompt files.
NAMES = {"prontoqa": "ProntoQA", "proofwriter": "ProofWriter", "folio": "FOLIO",
         "logicaldeduction": "LogicalDeduction", "ar-lsat": "AR-LSAT"}
# Each placeholder of Logic-LM's files and the value that fills it (prompts.problem_fields, and the
# refine stage's program and error).
FIELDS = {"PROBLEM": "context", "QUESTION": "question", "CHOICES": "choices", "PROGRAM": "program",
          "ERROR MESSAGE": "error"}
_PLACEHOLDER = re.compile(r"\[\[([A-Z][A-Z ]*)\]\]")
_OFFLINE = "`--prompts logic-lm` needs the network once; after that the cached copy is used"


def formulate_file(prompt_id: str) -> str:
    """The pinned file (a key of source.json's sha256) holding Logic-LM's prompt for a dataset."""
    name = NAMES.get(prompt_id)
    if name is None:
        raise UsageError(f"Logic-LM has no prompt for '{prompt_id}' (it has {', '.join(NAMES)}); "
                         "drop --prompts logic-lm or give a folder of your own prompts")
    return f"prompts/{name}.txt"


def refine_file(prompt_id: str) -> str | None:
    """Logic-LM's self-correction prompt for a dataset, or None where it had none (ProntoQA,
    ProofWriter: its refinement ran on FOLIO and AR-LSAT only)."""
    name = NAMES.get(prompt_id)
    relative = f"prompts/self-correct-{name}.txt"
    return relative if name is not None and relative in registry.source().sha256 else None


def read(relative: str) -> str:
    """The text of a pinned prompt file, from the cache or downloaded and checked once."""
    return cached_file(relative, registry.source(), hint=_OFFLINE).read_text(encoding="utf-8")


def needed(text: str, where: str) -> set[str]:
    """The values (context, question, ...) a prompt file's placeholders ask for."""
    found = set(_PLACEHOLDER.findall(text))
    unknown = found - set(FIELDS)
    if unknown:
        raise PrerequisiteError(f"{where} has placeholders logicpipe cannot fill: "
                                f"{', '.join(f'[[{u}]]' for u in sorted(unknown))}")
    return {FIELDS[name] for name in found}


def fill(text: str, values: Mapping[str, str]) -> str:
    """The prompt with its placeholders filled as Logic-LM filled them: the context as it is, the
    question, program and error message stripped, the options as `(A) ...` lines. One pass, so a
    problem whose text contains `[[QUESTION]]` is not filled twice."""
    def value(match: re.Match[str]) -> str:
        name = FIELDS[match.group(1)]
        return values[name] if name == "context" else values[name].strip()

    return _PLACEHOLDER.sub(value, text)


def choices(options: list[str]) -> str:
    """Options as Logic-LM wrote them into its LogicalDeduction and AR-LSAT prompts: `A) x` -> `(A) x`."""
    return "\n".join(f"({option.strip()}" for option in options).strip()
