"""`kb add` and `kb retract`: facts (typed, or a model's translation of a statement) are judged against the
KB by SWI-Prolog itself (facts.pl: arity, argument types, duplicates, where each stands), turned into an
edit of the KB's files, shown as a diff, and written only when confirmed, with a backup; the KB must
still load afterwards, with every added fact in it and every removed one gone, or the files are restored."""

from __future__ import annotations

import difflib
import json
import os
import shutil
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..core.errors import UsageError
from ..llm import LLMError, Request
from ..prompts import PromptSet
from .check import run_tool
from .flow import Flow, Settings, code_block

FACTS_TOOL = Path(__file__).with_name("facts.pl")
Mode = Literal["add", "remove"]
PROMPT = {"add": "kb-add", "remove": "kb-retract"}


class Judged(BaseModel):
    """One candidate fact as facts.pl judged it (see there for the fields)."""

    model_config = ConfigDict(extra="forbid")
    text: str
    status: Literal["new", "present", "missing", "refused"]
    reason: str = ""
    fact: str = ""  # as SWI-Prolog's portray_clause writes it, with its full stop
    predicate: str = ""
    module: str = ""
    file: str = ""
    after: int = 0  # add: where the predicate's last clause ends in `file` (a character offset)
    ranges: list[list[int]] = Field(default_factory=list)  # remove: [start, end) of each clause that is it


class Judgement(BaseModel):
    model_config = ConfigDict(extra="forbid")
    errors: list[str] = Field(default_factory=list)  # the KB's load errors
    clauses: int = 0  # in the whole KB
    facts: list[Judged] = Field(default_factory=list)

    def changes(self, mode: Mode) -> list[Judged]:
        return [j for j in self.facts if j.status == ("new" if mode == "add" else "present")]


def judge(path: Path, mode: Mode, texts: list[str], seconds: float = 60.0) -> Judgement:
    raw, names = run_tool(FACTS_TOOL, "kb_facts:main", path, json.dumps({"mode": mode, "facts": texts}, ensure_ascii=False), seconds)
    judgement = Judgement.model_validate(raw)
    for judged in judgement.facts:
        judged.file = names.get(judged.file, judged.file)  # as the user named it
    if mode == "remove":  # a fact repeated in the request is removed once, so is not a second change
        for judged in judgement.facts:
            if judged.reason == "already in this request":
                judged.status = "missing"
    return judgement


def candidates(reply: str) -> list[str]:
    """The facts in a model's reply: one per line of its first fenced block (or of the whole reply),
    without the full stop; NONE means there are none."""
    body = code_block(reply).strip()
    if body.upper().rstrip(".") == "NONE":
        return []
    lines = [line.strip() for line in body.splitlines()]
    return [line[:-1].rstrip() if line.endswith(".") else line
            for line in lines if line and not line.startswith("%")]


def translate_flow(statement: str, mode: Mode, prompts: PromptSet, words: dict[str, str],
                   settings: Settings) -> Flow:
    """A statement to candidate facts (a list of texts), through one model request."""
    prompt = prompts.get(PROMPT[mode])
    reply = yield Request("", prompt.render(statement=statement, **words), settings.temperature,
                          settings.max_tokens, purpose=PROMPT[mode], problem=mode)
    if isinstance(reply, LLMError):
        raise reply
    return candidates(reply.text)


def edited(judged: list[Judged], mode: Mode) -> dict[Path, tuple[str, str]]:
    """Each file to change, with its text now and after the change. An added fact goes on a line of its
    own after the line where its predicate's last clause ends; a removed one takes its whole line with
    it when nothing else stands there."""
    by_file: dict[Path, list[Judged]] = {}
    for item in judged:
        by_file.setdefault(Path(item.file), []).append(item)
    changes: dict[Path, tuple[str, str]] = {}
    for file, items in by_file.items():
        old = file.read_text(encoding="utf-8")
        changes[file] = (old, _added(old, items) if mode == "add" else _removed(old, items))
    return changes


def _added(text: str, items: list[Judged]) -> str:
    inserts: dict[int, list[str]] = {}
    for item in items:
        stop = text.find(".", item.after) + 1  # the last clause's full stop
        newline = text.find("\n", stop)
        rest = text[stop:len(text) if newline < 0 else newline].strip()
        if rest and not rest.startswith("%"):  # more code on that line: the fact goes right after the stop
            inserts.setdefault(stop, []).append("\n" + item.fact)
        elif newline < 0:  # the last line of a file without a final newline
            inserts.setdefault(len(text), []).append("\n" + item.fact)
        else:
            inserts.setdefault(newline + 1, []).append(item.fact + "\n")
    out, last = [], 0
    for at in sorted(inserts):
        out.append(text[last:at])
        out.extend(inserts[at])
        last = at
    out.append(text[last:])
    return "".join(out)


def _removed(text: str, items: list[Judged]) -> str:
    spans = sorted({(start, end) for item in items for start, end in item.ranges}, reverse=True)
    for start, end in spans:
        stop = text.find(".", end) + 1  # the clause's full stop
        line_start = text.rfind("\n", 0, start) + 1
        line_end = text.find("\n", stop)
        line_end = len(text) if line_end < 0 else line_end
        if not text[line_start:start].strip() and not text[stop:line_end].strip():
            start, stop = line_start, min(line_end + 1, len(text))  # the whole line goes
        else:
            while stop < line_end and text[stop] == " ":
                stop += 1
        text = text[:start] + text[stop:]
    return text


def diff(changes: dict[Path, tuple[str, str]]) -> str:
    return "".join("".join(difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                                fromfile=str(file), tofile=str(file)))
                   for file, (old, new) in changes.items())


def backup_path(file: Path) -> Path:
    return file.with_name(file.name + ".bak")


def write(path: Path, changes: dict[Path, tuple[str, str]], mode: Mode, judged: list[Judged],
          before: Judgement) -> list[Path]:
    """Back up and write each changed file, then judge the facts again: the KB must load without new
    errors, hold every added fact (lack every removed one) and no other clause may have come or gone;
    else every file is restored."""
    backups = []
    for file, (_, new) in changes.items():
        backup = backup_path(file)
        shutil.copy2(file, backup)
        backups.append(backup)
        _replace(file, new)
    try:
        again = judge(path, mode, [item.fact[:-1] for item in judged])
        # An added fact must now be present; a removed one not (its predicate may be gone with it).
        wrong = [item.text for item in again.facts if (item.status == "present") != (mode == "add")]
        new_errors = [e for e in again.errors if e not in before.errors]
        count = before.clauses + (1 if mode == "add" else -1) * sum(max(1, len(item.ranges)) for item in judged)
        if new_errors or wrong or again.clauses != count:
            why = (f"it would no longer load ({new_errors[0]})" if new_errors else f"{wrong[0]} did not take"
                   if wrong else f"the KB would have {again.clauses} clauses, not {count}")
            raise UsageError(f"the change was undone: {why}; the KB's files are as they were")
    except BaseException:
        for file, (old, _) in changes.items():
            _replace(file, old)
        raise
    return backups


def _replace(file: Path, text: str) -> None:
    """Write through a temporary file, so a kill mid-write leaves the old or the new text, never half."""
    temporary = file.with_name(f".{file.name}.tmp")
    temporary.write_text(text, encoding="utf-8")
    shutil.copymode(file, temporary)
    os.replace(temporary, file)
