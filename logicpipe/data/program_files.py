"""Programs a person writes, for `--programs`: a JSONL file of {"id": ..., "program": ...} lines (or
{"id": ..., "programs": [...]}, K samples of one problem, voted over as a run with --num-samples K
does), or a folder of `<id>.<ext>` files, one program each, its text as written (no JSON escaping).

Both are indexed as Logic-LM's released file is (programs.py, which imports this module; this one
imports no other reader): the index keeps where each program is, and a chunk of the run reads its
programs when it asks for them. Unlike a released file, which covers a whole split, a written one is
checked against the task's ids before the run starts (`unknown`): a program for no problem is a typo,
and one line naming the line or file says so.
"""

from __future__ import annotations

import json
from collections.abc import Container, Iterable, Iterator
from contextlib import ExitStack
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..core.errors import DataError
from ..core.jsonl import json_fault

# A file with this suffix is read as a person's JSONL (any other file as Logic-LM's released JSON).
LINES_SUFFIX = ".jsonl"
# As --num-samples: the most samples a problem may have.
MAX_SAMPLES = 64


class ProgramIndex:
    """Membership, count and order of the ids that have a program (`_where`, filled by each reader)."""

    _where: dict[str, Any]

    def __contains__(self, identifier: object) -> bool:
        return identifier in self._where

    def __len__(self) -> int:
        return len(self._where)

    def __iter__(self) -> Iterator[str]:
        return iter(self._where)

    def texts(self, ids: Iterable[str]) -> dict[str, str]:
        raise NotImplementedError

    def samples(self, ids: Iterable[str]) -> dict[str, list[str]]:
        """Every sample of each id that has a program (one, unless the file gives several)."""
        return {identifier: [text] for identifier, text in self.texts(ids).items()}


class WrittenPrograms(ProgramIndex):
    """A written file's or folder's programs: what a run asks of Logic-LM's (programs.Programs: `in`,
    len, iteration, texts), with where each id was written, for error messages."""

    def __init__(self, path: Path):
        self.path = path
        self.places: dict[str, str] = {}  # every id written -> "file.jsonl:3" or "folder/id.lp"
        self._where: dict[str, tuple[int, int] | Path] = {}  # id with a program -> its line's bytes, or file

    def texts(self, ids: Iterable[str]) -> dict[str, str]:
        """The (first) program of each id that has one, read from the file (or the id's file) now."""
        return {identifier: texts[0] for identifier, texts in self.samples(ids).items()}

    def samples(self, ids: Iterable[str]) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        with ExitStack() as stack:
            handle = None
            for identifier in ids:
                where = self._where.get(identifier)
                if isinstance(where, Path):
                    found[identifier] = [_read(where)]
                elif where is not None:
                    handle = handle or stack.enter_context(open(self.path, "rb"))
                    handle.seek(where[0])
                    item = json.loads(handle.read(where[1] - where[0]))
                    texts = item["programs"] if "programs" in item else [item["program"]]
                    found[identifier] = texts  # an empty sample stays: a failed sample, as in LINC's files
        return found

    def unknown(self, ids: Container[str]) -> str | None:
        """Where the first program for an id not in `ids` was written, naming the id; None if all are known."""
        for identifier, place in self.places.items():
            if identifier not in ids:
                return f"{place}: no problem {identifier!r}"
        return None

    def add(self, identifier: str, place: str, text: str, where: tuple[int, int] | Path) -> None:
        if identifier in self.places:
            raise DataError(f"{place}: a second program for {identifier!r} (the first is {self.places[identifier]})")
        self.places[identifier] = place
        if text.strip():  # an empty program is no program: a no_program record, as in a released file
            self._where[identifier] = where


def is_written(path: Path) -> bool:
    """Whether `--programs PATH` names programs a person wrote (a folder or a JSONL file)."""
    return path.is_dir() or path.suffix.lower() == LINES_SUFFIX


def index_written(path: Path) -> WrittenPrograms:
    """The JSONL file or folder indexed; the first mistake is one DataError naming its line or file."""
    if not path.exists():
        raise DataError(f"programs file {path} not found")
    stat = path.stat()
    return _folder(path, stat.st_mtime_ns) if path.is_dir() else _lines(path, stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=4)
def _lines(path: Path, mtime_ns: int, size: int) -> WrittenPrograms:
    programs = WrittenPrograms(path)
    end = 0
    with open(path, "rb") as handle:
        for number, line in enumerate(handle, start=1):
            start, end, where = end, end + len(line), f"{path}:{number}"
            if not line.strip():
                continue
            try:
                item = json.loads(line.decode("utf-8"))
            except UnicodeDecodeError:
                raise DataError(f"{where}: not UTF-8 text") from None
            except json.JSONDecodeError as exc:
                raise DataError(f"{where}: {json_fault(exc, one_line=True)}") from None
            except RecursionError:
                raise DataError(f"{where}: JSON nested too deeply to read") from None
            if not isinstance(item, dict) or "id" not in item or ("program" in item) == ("programs" in item):
                raise DataError(f'{where}: expected an object with "id" and "program" (or "programs", a list of '
                                'samples), e.g. {"id": "ProntoQA_1", "program": "Predicates: ..."}')
            identifier = item["id"]
            if isinstance(identifier, bool) or not isinstance(identifier, (str, int)):
                raise DataError(f'{where}: "id" must be a string or an integer')
            if "programs" in item:
                texts = item["programs"]
                if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
                    raise DataError(f'{where}: "programs" must be a non-empty list of program texts (strings)')
                if len(texts) > MAX_SAMPLES:
                    raise DataError(f'{where}: {len(texts)} samples; at most {MAX_SAMPLES} per problem')
                text = "".join(texts)
            else:
                text = item["program"]
                if not isinstance(text, str):
                    raise DataError(f'{where}: "program" must be the program\'s text (a string)')
            programs.add(str(identifier), where, text, (start, end))
    if not programs.places:
        raise DataError(f'{path}: no programs (expected lines of {{"id": ..., "program": ...}})')
    return programs


@lru_cache(maxsize=4)
def _folder(path: Path, mtime_ns: int) -> WrittenPrograms:
    # The folder's mtime changes when a file is added, removed or renamed; a file's text is read when
    # a chunk asks for it, so an edited program is seen without re-indexing.
    programs = WrittenPrograms(path)
    for file in sorted(path.iterdir()):
        if file.name.startswith("."):
            continue  # .DS_Store, .gitkeep, an editor's swap file
        if not file.is_file():
            raise DataError(f"{file}: not a program file (a programs folder holds one <id>.<ext> file per problem)")
        identifier = file.stem if file.suffix else file.name
        programs.add(identifier, str(file), _read(file), file)
    if not programs.places:
        raise DataError(f"{path}: an empty folder (expected one <id>.<ext> file per problem)")
    return programs


def _read(file: Path) -> str:
    try:
        return file.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(f"{file}: not UTF-8 text (byte {exc.start}); is it binary, or UTF-16?") from None
