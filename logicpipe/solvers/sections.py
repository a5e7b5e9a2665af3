"""Line-level reading shared by the sectioned program formats (`Facts:`, `Premises:`, `Query:`, ...)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from ..core.errors import ProgramParseError

# Where a model's output runs on past the program: Logic-LM's stop sequence (a line of dashes) or a
# rule of = or #, and the headers of a next problem or of commentary.
_END_OF_PROGRAM = re.compile(
    r"^\s*(?:[-=#]{3,}\s*$|(?:Problem|Context|Question|Options|Explanation|Example)\s*\d*\s*:)", re.IGNORECASE)
# The first characters such a line can start with (after spaces): most lines are tried no further.
_END_STARTS = frozenset("-=#PCQOEpcqoe")


def split_comment(line: str) -> tuple[str, str]:
    """'formula ::: comment' -> ('formula', 'comment')."""
    code, _, comment = line.partition(":::")
    return code.strip(), comment.strip()


def quote(text: str, limit: int = 60) -> str:
    """A short, single-line rendering of dropped text for a note."""
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[:limit - 3] + "...")


def lines_note(count: int, where: str, first: str) -> str:
    """'ignored 2 lines after the query: 'Answer: Unknown.'' -- one wording for every ignored run."""
    return f"ignored {count} line{'s' if count != 1 else ''} {where}: {quote(first)}"


@dataclass
class SourceLine:
    section: str
    number: int
    code: str
    comment: str
    raw: str


def walk_sections(text: str, names: tuple[str, ...], aliases: dict[str, str] | None = None,
                  unique: bool = False, seen: set[str] | None = None,
                  notes: list[str] | None = None) -> Iterator[SourceLine]:
    """Yield every non-blank line under its section. Header lines (`Name:`) switch the section and
    are collected in `seen`; a repeated header continues its section (merged), unless `unique`.

    With a `notes` list, the walker also reads unseen model output leniently and says what it dropped
    there: text before the first header is skipped, and the program ends at a line of dashes or a next
    `Problem:`/`Question:`/... header. Without one, nothing is dropped: text before the first header
    is a parse error."""
    aliases = aliases or {}
    section = None
    seen = set() if seen is None else seen
    lines = text.splitlines()
    leading: list[str] = []
    for number, raw in enumerate(lines, start=1):
        code, comment = split_comment(raw)
        header = code.rstrip(":").strip()
        if code.endswith(":") and (header in names or header in aliases):
            header = aliases.get(header, header)
            if unique and header in seen:
                raise ProgramParseError(f"section '{header}:' appears twice", number)
            section = header
            seen.add(header)
            if leading and notes is not None:
                notes.append(lines_note(len(leading), "before the first section header", leading[0]))
                leading = []
            continue
        if not code:
            continue
        # code is not empty, so its first character is the line's first after spaces.
        if notes is not None and section is not None and code[0] in _END_STARTS and _END_OF_PROGRAM.match(raw):
            rest = [line for line in lines[number - 1:] if line.strip()]
            notes.append(lines_note(len(rest), "after the end of the program", rest[0]))
            break
        if section is None:
            if notes is None:
                raise ProgramParseError("text before the first section header", number, text=raw)
            leading.append(raw)
            continue
        yield SourceLine(section, number, code, comment, raw)
