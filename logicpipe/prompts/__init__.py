"""Prompts as package data: each template has an id and a content hash, recorded on every record
that used it. A run may point at a directory of its own templates (`--prompts DIR`); files found
there replace the shipped ones of the same name. `--prompts logic-lm` uses Logic-LM's own
formulation and self-correction prompts instead (logiclm.py), and ours where Logic-LM had none."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

from ..core.errors import PrerequisiteError, UsageError, did_you_mean
from ..core.records import Problem
from . import logiclm

_SPLIT = "=== user ==="
_FIELD = re.compile(r"\{\{(\w+)\}\}")
_FENCE = re.compile(r"```[\w-]*\n(.*?)```", re.S)


@dataclass(frozen=True)
class Prompt:
    id: str
    system: str
    user: str
    hash: str
    # Logic-LM's prompts: one completion-style text with [[PLACEHOLDERS]], sent as the only (user)
    # message and cut at the stop marker, as Logic-LM sent them (logiclm.py).
    paper: bool = False
    stop: tuple[str, ...] = ()

    @property
    def fields(self) -> set[str]:
        if self.paper:
            return logiclm.needed(self.user, self.id)
        return set(_FIELD.findall(self.user))

    def render(self, **values: str) -> list[dict[str, str]]:
        missing = self.fields - set(values)
        if missing:
            raise UsageError(f"prompt {self.id} needs {', '.join(sorted(missing))}")
        if self.paper:
            return [{"role": "user", "content": logiclm.fill(self.user, values)}]
        user = _FIELD.sub(lambda m: values[m.group(1)], self.user)
        return [{"role": "system", "content": self.system}, {"role": "user", "content": user}]


def _parse(prompt_id: str, text: str, where: str) -> Prompt:
    system, sep, user = text.partition(_SPLIT)
    if not sep:
        raise PrerequisiteError(f"prompt {where} has no '{_SPLIT}' line")
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    return Prompt(prompt_id, system.strip(), user.strip() + "\n", digest)


def _check_fields(prompt: Prompt, path: Path) -> Prompt:
    """A folder's template must keep every {{variable}} the shipped one of its name has: the stage fills
    them in, and a template without {{context}} would never show the model the problem."""
    shipped = _shipped(prompt.id)
    missing = sorted(shipped.fields - prompt.fields) if shipped is not None else []
    if missing:
        names = ", ".join(f"{{{{{name}}}}}" for name in missing)
        raise UsageError(f"prompt {path} lacks {names}, which the stage fills in (the shipped {prompt.id} "
                         f"template has {'it' if len(missing) == 1 else 'them'}); put "
                         f"{'it' if len(missing) == 1 else 'them'} after the '=== user ===' line")
    return prompt


@cache
def _shipped_ids() -> list[str]:
    return sorted(entry.name.removesuffix(".txt") for entry in resources.files(__package__).joinpath("templates").iterdir()
                  if entry.name.endswith(".txt"))


@cache
def _shipped(prompt_id: str) -> Prompt | None:
    resource = resources.files(__package__).joinpath("templates").joinpath(f"{prompt_id}.txt")
    if not resource.is_file():
        return None
    return _parse(prompt_id, resource.read_text(encoding="utf-8"), f"{prompt_id} (shipped)")


def prompts_option(text: str | None) -> Path | None:
    """--prompts as typed: only the bare word `logic-lm` names Logic-LM's prompts; a path is a folder,
    so `./logic-lm` and `logic-lm/` (which Path would shorten to the word) are kept as absolute paths."""
    if text is None:
        return None
    path = Path(text)
    return path.absolute() if text != logiclm.PAPER and str(path) == logiclm.PAPER else path


def is_paper(folder: Path) -> bool:
    """Whether a --prompts value (after prompts_option) names Logic-LM's prompts rather than a folder."""
    return str(folder) == logiclm.PAPER


class PromptSet:
    def __init__(self, folder: Path | None = None):
        self.paper = folder is not None and is_paper(folder)
        if folder is not None and not self.paper:
            if not folder.is_dir():
                raise UsageError(f"prompt folder {folder} not found")
            if not any(path.is_file() for path in folder.glob("*.txt")):
                # An empty folder, or an optimisation's OUT instead of OUT/best: it would change nothing.
                raise UsageError(f"prompt folder {folder} holds no template (*.txt file), so it would change "
                                 "nothing; the prompts `logicpipe optimize` found are in its OUT/best")
        self.folder = None if self.paper else folder
        self._downloaded: dict[str, Prompt] = {}

    def check_overrides(self, used: list[str]) -> None:
        """Refuse a folder none of whose templates is one of `used` (those the run reads): a misspelt or
        mis-cased file name would otherwise leave every shipped template in place without a word."""
        if self.folder is None:
            return
        names = sorted(path.name for path in self.folder.glob("*.txt") if path.is_file())
        if not {Path(name).stem for name in names} & set(used):
            could = ", ".join(f"{name}.txt" for name in sorted(set(used))) or "none (this run writes no prompt)"
            raise UsageError(f"prompt folder {self.folder} overrides no template this run uses (it holds "
                             f"{', '.join(names)}); the names it could override (case matters): {could}")

    def get(self, prompt_id: str) -> Prompt:
        if self.paper and prompt_id in logiclm.NAMES:
            return self._logic_lm(logiclm.formulate_file(prompt_id))
        if self.folder is not None:
            path = self.folder / f"{prompt_id}.txt"
            if path.is_file():
                return _check_fields(_parse(prompt_id, path.read_text(encoding="utf-8"), str(path)), path)
        prompt = _shipped(prompt_id)
        if prompt is None:
            # A misspelt id in a task file or a folder: bad input, answered with the ids there are.
            where = f"Logic-LM's prompts ({', '.join(logiclm.NAMES)}) or the package" if self.paper else None
            own = [path.stem for path in self.folder.glob("*.txt")] if self.folder is not None else []
            known = sorted({*_shipped_ids(), *own, *(logiclm.NAMES if self.paper else ())})
            raise UsageError(f"no prompt '{prompt_id}' in {where or self.folder or 'the package'}"
                             f"{did_you_mean(prompt_id, known)}; "
                             f"choose from {', '.join(known)}")
        return prompt

    def has(self, prompt_id: str) -> bool:
        """Whether get(prompt_id) finds a template (in the folder, or shipped)."""
        return ((self.folder is not None and (self.folder / f"{prompt_id}.txt").is_file())
                or _shipped(prompt_id) is not None)

    def refine(self, formulate_id: str) -> Prompt:
        """The refinement prompt of a task whose formulate prompt is `formulate_id`: with
        `--prompts logic-lm`, Logic-LM's self-correct-<Dataset>.txt where it had one; else ours."""
        relative = logiclm.refine_file(formulate_id) if self.paper else None
        return self._logic_lm(relative) if relative else self.get("refine")

    def _logic_lm(self, relative: str) -> Prompt:
        if relative not in self._downloaded:
            text = logiclm.read(relative)
            name = Path(relative).stem
            logiclm.needed(text, f"Logic-LM's {name}.txt")
            digest = hashlib.sha256(text.encode()).hexdigest()[:12]
            self._downloaded[relative] = Prompt(f"{logiclm.PAPER}/{name}", "", text, digest, paper=True,
                                                stop=(logiclm.STOP,))
        return self._downloaded[relative]

    def guide(self, solver: str) -> str:
        """The per-language guide sent with refinement requests (an empty string if there is none)."""
        name = f"guide-{solver}"
        own = self.folder is not None and (self.folder / f"{name}.txt").is_file()
        return self.get(name).user.strip() if own or _shipped(name) is not None else ""

    def identity(self, *prompt_ids: str) -> dict[str, str]:
        return {prompt_id: self.get(prompt_id).hash for prompt_id in prompt_ids}


# A sentence ends at . ! or ? before a space and a capital, digit or quote (as ProofWriter's and FOLIO's
# contexts are written; LINC splits ProofWriter's theory at ". ").
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'])")
# The lead-in of a truth-value question ("Based on the above information, is the following statement
# true, false, or uncertain? <statement>"), as Logic-LM's FOLIO, ProofWriter and ProntoQA write it.
_LEAD_IN = re.compile(r"^.*?\btrue,\s*false,?\s*or\s*(?:uncertain|unknown)\s*\?\s*", re.IGNORECASE | re.DOTALL)


# The fields problem_fields fills, which a template may use (a chain's steps are checked against them).
PROBLEM_FIELDS = ("context", "question", "options", "choices", "premises", "statement")


def problem_fields(problem: Problem) -> dict[str, str]:
    """What a template may fill in: the problem's own fields, its options as Logic-LM wrote them
    (`choices`), and for LINC's prompts its context one sentence a line (`premises`) and the statement
    a truth-value question asks about (`statement`; the whole question when it has no such lead-in)."""
    premises = "\n".join(part.strip() for part in _SENTENCE_END.split(problem.context.strip()) if part.strip())
    return {"context": problem.context, "question": problem.question, "options": "\n".join(problem.options),
            "choices": logiclm.choices(problem.options), "premises": premises,
            "statement": _LEAD_IN.sub("", problem.question, count=1).strip() or problem.question}


def extract_program(text: str) -> str:
    """The program inside a reply: the first fenced block if there is one, minus a leading 'Program:'."""
    fenced = _FENCE.search(text)
    body = fenced.group(1) if fenced else text
    body = body.strip()
    if body.lower().startswith("program:"):
        body = body[len("program:"):].strip()
    return body + "\n"
