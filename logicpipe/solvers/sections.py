"""Line-level reading shared by the sectioned program formats (`Facts:`, `Premises:`, `Query:`, ...)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ..errors import ProgramParseError


def split_comment(line: str) -> tuple[str, str]:
    """'formula ::: comment' -> ('formula', 'comment')."""
    code, _, comment = line.partition(":::")
    return code.strip(), comment.strip()


@dataclass
class SourceLine:
    section: str
    number: int
    code: str
    comment: str
    raw: str


def walk_sections(text: str, names: tuple[str, ...], aliases: dict[str, str] | None = None,
                  unique: bool = True, seen: set[str] | None = None) -> Iterator[SourceLine]:
    """Yield every non-blank line under its section. Header lines (`Name:`) switch the section and
    are collected in `seen`; text before the first header is a parse error, and so is a repeated
    header when `unique`."""
    aliases = aliases or {}
    section = None
    seen = set() if seen is None else seen
    for number, raw in enumerate(text.splitlines(), start=1):
        code, comment = split_comment(raw)
        header = code.rstrip(":").strip()
        if code.endswith(":") and (header in names or header in aliases):
            header = aliases.get(header, header)
            if unique and header in seen:
                raise ProgramParseError(f"section '{header}:' appears twice", number)
            section = header
            seen.add(header)
            continue
        if not code:
            continue
        if section is None:
            raise ProgramParseError("text before the first section header", number, text=raw)
        yield SourceLine(section, number, code, comment, raw)
