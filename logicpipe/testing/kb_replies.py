"""Canned replies for `logicpipe kb ask` and `kb validate`, so both can be dry-run against
`logicpipe serve-scripted --kb-replies FILE` with no model.

The file is JSONL. A line with a "question" scripts `kb ask`: its "goals" (a list of goal texts, or one
text; none: the model finds the question UNANSWERABLE), and optionally the final "answer" and, for
`--context model`, the "context" sentences. A line with "claims" scripts `kb validate` for the answer
text in its "answer": the claims, a list of {"claim": ..., "goal": ...} (goal null: untranslatable).
examples/kb/questions.jsonl is such a file; other keys are ignored.

A single question or answer on the command line reaches the server with the id "cli", so a request is
matched by the question's (or answer's) text in its prompt, whitespace aside; where several match, the
longest wins. The KB's proofs are real: only the model's part is canned.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import DataError
from ..core.jsonl import iter_json_lines

NO_ANSWER = "(serve-scripted: no scripted answer for this question)"
NO_CONTEXT = "(serve-scripted: no scripted context for this question)"
NO_CLAIMS = "(serve-scripted: no scripted claims for this answer)"  # not a JSON list: an error record


@dataclass
class Asked:
    goals: list[str]
    answer: str | None = None
    context: str | None = None


@dataclass
class KBReplies:
    asked: dict[str, Asked] = field(default_factory=dict)  # question text (normalised) -> its replies
    claims: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # answer text (normalised) -> claims
    _last: dict[str, str] = field(default_factory=dict)  # input id -> the question its goals were asked for
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __len__(self) -> int:
        return len(self.asked) + len(self.claims)

    def reply(self, purpose: str, problem: str, body: dict) -> str:
        prompt = _plain("\n".join(str(m.get("content", "")) for m in body.get("messages", [])))
        if purpose == "kb-claims":
            found = _longest(self.claims, prompt)
            return json.dumps(self.claims[found], ensure_ascii=False) if found is not None else NO_CLAIMS
        question = _longest(self.asked, prompt)
        with self._lock:
            if question is not None:
                self._last[problem] = question
            elif purpose == "kb-context":  # its prompt holds the proofs' results, not the question
                question = self._last.get(problem)
        asked = self.asked.get(question) if question is not None else None
        if purpose == "kb-goals":
            if asked is None or not asked.goals:
                return "UNANSWERABLE"
            return "```prolog\n" + "\n".join(asked.goals) + "\n```"
        if purpose == "kb-context":
            return asked.context if asked is not None and asked.context else NO_CONTEXT
        return asked.answer if asked is not None and asked.answer else NO_ANSWER


def read_kb_replies(paths: list[Path]) -> KBReplies:
    """The files' lines; a line that scripts nothing, or scripts it wrongly, is one DataError naming it."""
    replies = KBReplies()
    for path in paths:
        for number, line in iter_json_lines(path):
            where = f"{path}:{number}"
            if not isinstance(line, dict) or not ("question" in line or "claims" in line):
                raise DataError(f'{where}: expected an object with "question" (and "goals") for kb ask, or '
                                '"answer" and "claims" for kb validate')
            if "question" in line:
                question, goals = line["question"], line.get("goals", [])
                goals = [goals] if isinstance(goals, str) else goals
                if not isinstance(question, str) or not _texts(goals):
                    raise DataError(f'{where}: "question" must be a text and "goals" a list of goal texts')
                for key in ("answer", "context"):
                    if not isinstance(line.get(key, ""), str):
                        raise DataError(f'{where}: "{key}" must be a text')
                _put(replies.asked, question, Asked(goals, line.get("answer"), line.get("context")), where)
            else:
                answer, claims = line.get("answer"), line["claims"]
                if not isinstance(answer, str) or not isinstance(claims, list) or not all(
                        isinstance(c, dict) and isinstance(c.get("claim"), str)
                        and isinstance(c.get("goal"), (str, type(None))) for c in claims):
                    raise DataError(f'{where}: expected "answer" (a text) and "claims", a list of '
                                    '{"claim": "...", "goal": "..." or null}')
                _put(replies.claims, answer, [{"claim": c["claim"], "goal": c.get("goal")} for c in claims], where)
    return replies


def _put(table: dict, text: str, value: Any, where: str) -> None:
    key = _plain(text)
    if not key:
        raise DataError(f"{where}: an empty question or answer matches every request")
    if key in table:
        raise DataError(f"{where}: {text!r} is scripted twice")
    table[key] = value


def _texts(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _plain(text: str) -> str:
    return " ".join(text.split())


def _longest(table: dict, prompt: str) -> str | None:
    found = [key for key in table if key in prompt]
    return max(found, key=len) if found else None
