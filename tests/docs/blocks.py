"""Reading the fenced shell blocks of README.md and the docs pages, and the `logicpipe ...` commands in them."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = "<!-- quickstart"
_FENCE = re.compile(r"^```(\w*)\s*$")
_SHELL = {"sh", "bash", "shell", "console", ""}


def fenced_blocks(text: str) -> list[tuple[str, str, str]]:
    """(language, body, the line before the opening fence) for every fenced block."""
    blocks = []
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        match = _FENCE.match(lines[index])
        if match is None:
            index += 1
            continue
        before = lines[index - 1] if index else ""
        end = index + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        blocks.append((match.group(1), "\n".join(lines[index + 1:end]), before))
        index = end + 1
    return blocks


def quickstart_block(readme: Path = ROOT / "README.md") -> str:
    """The block right after the `<!-- quickstart ... -->` marker: the one the README says to paste."""
    marked = [body for _, body, before in fenced_blocks(readme.read_text(encoding="utf-8"))
              if before.startswith(QUICKSTART)]
    if len(marked) != 1:
        raise AssertionError(f"README.md must mark exactly one quick-start block, found {len(marked)}")
    return marked[0]


def commands(body: str) -> list[list[str]]:
    """The `logicpipe ...` command lines of a shell block as argument lists (after `logicpipe`):
    continuation lines joined, `$ ` prompts and comments dropped, cut at a pipe, redirect or `;`."""
    found = []
    joined = re.sub(r"\\\n\s*", " ", body)
    for line in joined.splitlines():
        line = line.strip().removeprefix("$ ")
        if not line.startswith("logicpipe "):
            continue
        words = shlex.split(line, comments=True)
        for stop in ("|", ">", ">>", "2>", ";", "&&", "&"):
            if stop in words:
                words = words[:words.index(stop)]
        found.append(words[1:])
    return found


def doc_pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def shell_blocks(page: Path) -> list[str]:
    return [body for language, body, _ in fenced_blocks(page.read_text(encoding="utf-8")) if language in _SHELL]
