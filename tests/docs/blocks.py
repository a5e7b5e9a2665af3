"""Reading the fenced shell blocks of README.md and the docs pages, and the `logicpipe ...` commands in them."""

from __future__ import annotations

import importlib.util
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = "<!-- quickstart"
# The line before a block that the docs test does not run: `<!-- not run: why -->` (a model key, a GPU,
# the network, root, a server that runs until Ctrl-C, minutes of work). Such a block is checked for
# shell syntax, its `logicpipe` options, its make targets and its scripts' options instead.
NOT_RUN = re.compile(r"^<!-- not run: (?P<why>\S.*?) -->$")
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


@dataclass
class Block:
    page: str  # relative to the repository root
    number: int  # 1-based among the page's shell blocks
    body: str
    why_not_run: str | None  # from the marker; None: the docs test runs it

    @property
    def first_line(self) -> str:
        return next((line.strip() for line in self.body.splitlines() if line.strip()), "")

    def script(self) -> str:
        """What a reader pastes: the whole block, or for a transcript (lines after a `$ ` prompt, the
        rest output) the prompted commands with their continuation lines."""
        lines = self.body.splitlines()
        if not any(line.startswith("$ ") for line in lines):
            # A line that says `# exit status N` must end with that status (a goal shown failing).
            return "\n".join(_expect(line) for line in lines)
        commands: list[list[str]] = []  # each prompted command's lines, then whether its output shows an error
        errors: list[bool] = []
        going = False
        for line in lines:
            if line.startswith("$ "):
                commands.append([line.removeprefix("$ ")])
                errors.append(False)
            elif going:
                commands[-1].append(line)
            elif commands and line.startswith("error: "):
                errors[-1] = True
            going = line.rstrip().endswith("\\")
        # A command whose shown output is an `error:` line must fail as shown.
        return "\n".join(f"if {chr(10).join(command)}\nthen echo 'expected an error' >&2; false; fi" if error
                         else "\n".join(command) for command, error in zip(commands, errors))


_STATUS = re.compile(r"#\s*exit status (\d+)")


def _expect(line: str) -> str:
    status = _STATUS.search(line)
    if status is None or line.rstrip().endswith("\\"):
        return line
    return (f"status=0; {line[:status.start()].rstrip()} || status=$?\n"
            f"[ $status -eq {status.group(1)} ] || {{ echo 'exit status '$status', not {status.group(1)}' >&2; false; }}")


def page_blocks(page: Path, root: Path = ROOT) -> list[Block]:
    """Every shell block of a page, and transcripts (`$ ` prompts) in untagged blocks, in page order."""
    found = []
    for language, body, before in fenced_blocks(page.read_text(encoding="utf-8")):
        transcript = language == "" and any(line.startswith("$ ") for line in body.splitlines())
        if language not in _SHELL - {""} and not transcript:
            continue
        marked = NOT_RUN.match(before.strip())
        why = marked.group("why") if marked else None
        if before.startswith(QUICKSTART):
            why = "the quick start: tests/docs/test_quickstart.py runs it"
        found.append(Block(page.relative_to(root).as_posix(), len(found) + 1, body, why))
    return found


def load_script(name: str) -> ModuleType:
    """scripts/NAME.py as a module (the scripts are no package), for the tests that check what it writes."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
