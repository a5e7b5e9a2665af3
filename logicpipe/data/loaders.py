"""Loading problems as a task file describes them (Logic-LM layout, JSONL, CSV, JSON, Hugging Face), and
Logic-LM's released programs."""

from __future__ import annotations

import csv
import io
import json
import os
import string
from collections.abc import Iterator
from pathlib import Path

from ..core.errors import DataError, UsageError, did_you_mean
from ..core.records import Problem
from ..solvers.base import option_letters
from .fetch import cached_file
from .programs import index_programs
from .registry import DatasetSpec, source
from .text import parse_json, read_text

DATA_ENV = "LOGICPIPE_DATA"


def data_root(data_dir: Path | str | None) -> Path | None:
    """The directory holding Logic-LM's data/ and programs/: the option, else LOGICPIPE_DATA, else None
    (meaning: use the download cache)."""
    chosen = data_dir if data_dir is not None else os.environ.get(DATA_ENV) or None
    if chosen is None:
        return None
    root = Path(chosen).expanduser()
    if not root.is_dir():
        raise DataError(f"data directory {root} does not exist (set --data-dir or {DATA_ENV})")
    return root


def resolve_file(relative: str, data_dir: Path | str | None) -> Path:
    root = data_root(data_dir)
    if root is not None:
        path = root / relative
        if not path.exists():
            raise DataError(f"{path} not found in data directory {root}")
        return path
    return cached_file(relative, source())


def load_problems(spec: DatasetSpec, split: str, data_dir: Path | str | None = None) -> list[Problem]:
    """The split's problems, mapped to Problem by the task's fields and checked (fields present, ids
    unique, answers inside the answer space); the first mistake is one DataError naming the row."""
    problems, issues = check_problems(spec, split, data_dir)
    if issues:
        more = f" (and {len(issues) - 1} more; see `logicpipe validate`)" if len(issues) > 1 else ""
        raise DataError(issues[0] + more)
    if not problems:
        raise DataError(no_problems(spec, split))
    return problems


def no_problems(spec: DatasetSpec, split: str, where: Path | None = None) -> str:
    """A split whose data holds no rows: nothing to run (`validate` says it as a warning)."""
    return f"task {spec.key}: split {split} has no problems ({where or 'its data'} holds 0 rows)"


def check_problems(spec: DatasetSpec, split: str, data_dir: Path | str | None = None
                   ) -> tuple[list[Problem], list[str]]:
    """The problems that map cleanly, and one line per row that does not."""
    if split not in spec.splits:
        raise UsageError(f"dataset {spec.key} has no split '{split}'{did_you_mean(split, spec.splits)}; "
                         f"choose from {', '.join(spec.splits)}")
    rows, where = read_rows(spec, split, data_dir)
    return map_rows(spec, rows, where)


def read_rows(spec: DatasetSpec, split: str, data_dir: Path | str | None) -> tuple[list[dict], str]:
    """The raw rows of a split, and a name for them in messages."""
    src = spec.source
    if src.format == "hf":
        from .hf import hf_rows

        return hf_rows(spec, split)
    if src.format == "logicbench":
        from .logicbench import rows

        return rows(spec, split)
    if src.format == "logic-lm":
        if src.path is not None:
            path = spec.local(src.path) / f"{split}.json"
            if not path.is_file():
                raise DataError(f"task {spec.key}: data file {path} not found")
        else:
            path = resolve_file(f"data/{src.folder or spec.title}/{split}.json", data_dir)
        return _json_rows(path, None), str(path)
    if src.path is None:
        raise DataError(f"task {spec.key}: source.path is needed for {src.format} files")
    path = spec.local(src.path.replace("{split}", split))
    if not path.is_file():
        raise DataError(f"task {spec.key}: data file {path} not found")
    if src.format == "jsonl":
        return _jsonl_rows(path), str(path)
    if src.format == "csv":
        return [dict(row) for row in csv.DictReader(io.StringIO(read_text(path), newline=""))], str(path)
    return _json_rows(path, src.records), str(path)


def _json_rows(path: Path, key: str | None) -> list[dict]:
    raw = parse_json(read_text(path), str(path))
    if key is not None:
        if not isinstance(raw, dict) or key not in raw:
            raise DataError(f"{path}: no key '{key}' holding the rows (source.records)")
        raw = raw[key]
    if not isinstance(raw, list) or not all(isinstance(row, dict) for row in raw):
        raise DataError(f"{path}: expected a JSON list of objects, one per problem")
    return raw


def _jsonl_rows(path: Path) -> list[dict]:
    return [row for _, row in jsonl_rows(path)]


def jsonl_rows(path: Path) -> Iterator[tuple[int, dict]]:
    """(byte offset, row) of each row of a JSONL file that is not blank, read a line at a time."""
    with open(path, "rb") as handle:
        offset = 0
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise DataError(f"{path}: not UTF-8 text (byte {offset + exc.start}); is it binary, or UTF-16?") from None
            if line.strip():
                row = parse_json(line, f"{path}:{number}", one_line=True)
                if not isinstance(row, dict):
                    raise DataError(f"{path}:{number}: expected a JSON object")
                yield offset, row
            offset += len(raw)


def map_rows(spec: DatasetSpec, rows: list[dict], where: str) -> tuple[list[Problem], list[str]]:
    problems: list[Problem] = []
    issues: list[str] = []
    seen: dict[str, int] = {}
    for index, row in enumerate(rows):
        try:
            problem, name = checked_row(spec, row, f"{where}: row {index + 1}")
        except RowIssue as exc:
            issues.append(str(exc))
            continue
        if problem.id in seen:
            issues.append(f"{name}: duplicate id, first used by row {seen[problem.id]}")
            continue
        seen[problem.id] = index + 1
        problems.append(problem)
    return problems, issues


class RowIssue(ValueError):
    """A row that cannot be a problem, in one line naming it."""


def checked_row(spec: DatasetSpec, row: dict, name: str) -> tuple[Problem, str]:
    """The row's problem and the row's `name` with its id; RowIssue when its fields do not map or its id
    is empty or has control characters. Whether the id is new is the caller's to check."""
    try:
        problem = map_row(spec, row)
    except FieldError as exc:
        raw_id = row.get(spec.fields.id) if spec.fields.id in row else None
        raise RowIssue(f"{name}{f' (id {raw_id!r})' if raw_id is not None else ''}: {exc}") from None
    name += f" (id {problem.id!r})"
    if not problem.id.isprintable() or not problem.id:
        raise RowIssue(f"{name}: the id is empty or has control characters")
    return problem, name


def map_row(spec: DatasetSpec, row: dict) -> Problem:
    fields = spec.fields
    _check_id(fields.id, row)
    values = {"id": fill(fields.id, row), "context": fill(fields.context, row),
              "question": fill(fields.question, row)}
    options = _options(fields.options, row)
    answer = fill(fields.answer, row).strip() if fields.answer else None
    if spec.answer_space == "truth":
        if options:
            raise FieldError("a truth task has no options (its answers are True, False or Unknown)")
        options = list(TRUTH_OPTIONS)
        if answer is not None:
            answer = _truth_letter(answer)
    elif spec.answer_space == "options" and answer is not None:
        letters = option_letters(options)
        if not letters:
            raise FieldError("no options, but the answer space is 'options'")
        answer = answer.strip().strip("()").rstrip(")").strip()
        if answer not in letters:
            raise FieldError(f"answer {answer!r} is not one of the options {', '.join(letters)}")
    return Problem(**values, options=options, answer=answer)


def _check_id(spec: str, row: dict) -> None:
    """An id is a string or an integer: a list or an object would be made into some text silently."""
    names = [spec] if "{" not in spec else [n for _, n, _, _ in _parsed(spec) if n]
    for name in names:
        value = row.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (str, int))):
            raise FieldError(f"the id field '{name}' holds {_kind(value)}; ids must be strings or integers")


def _kind(value: object) -> str:
    if isinstance(value, bool):
        return "true or false"
    return {list: "a list", dict: "an object", float: "a number with a fraction"}.get(type(value), type(value).__name__)


def _parsed(spec: str) -> list:
    try:
        return list(string.Formatter().parse(spec))
    except ValueError:
        return []  # fill() names the bad template


# A truth task is asked as three options, so interpretation and scoring stay those of Logic-LM's datasets.
TRUTH_OPTIONS = ("A) True", "B) False", "C) Unknown")
_TRUTH_LETTER = {"true": "A", "yes": "A", "false": "B", "no": "B", "unknown": "C", "uncertain": "C"}


def _truth_letter(answer: str) -> str:
    letter = _TRUTH_LETTER.get(answer.strip().rstrip(".").lower())
    if letter is None:
        raise FieldError(f"answer {answer!r} is not True, False or Unknown")
    return letter


class FieldError(ValueError):
    """A row that does not fit the task's field mapping (the caller names the row)."""


def fill(spec: str, row: dict) -> str:
    """A field name, or a template filled from the row with str.format_map (plain names only)."""
    if "{" not in spec:
        if spec not in row or row[spec] is None:
            raise FieldError(f"no field '{spec}'")
        return _text(row[spec])
    names = []
    try:
        for _, name, _, _ in string.Formatter().parse(spec):
            if name is not None:
                names.append(name)
    except ValueError as exc:
        raise FieldError(f"bad template {spec!r} ({exc})") from None
    for name in names:
        # Attribute and index lookups would reach into Python objects: only plain field names.
        if not name or not name.replace("_", "").replace("-", "").replace(" ", "").isalnum():
            raise FieldError(f"template {spec!r}: '{{{name}}}' is not a plain field name")
        if name not in row or row[name] is None:
            raise FieldError(f"no field '{name}' (template {spec!r})")
    return spec.format_map({name: _text(row[name]) for name in names})


def _text(value: object) -> str:
    if isinstance(value, list):
        return "\n".join(_text(item) for item in value)
    return value if isinstance(value, str) else json.dumps(value) if isinstance(value, dict) else str(value)


def _options(spec: str | list[str] | None, row: dict) -> list[str]:
    if spec is None:
        return []
    if isinstance(spec, list):
        return [fill(item, row) for item in spec]
    if "{" not in spec:
        if spec not in row:
            raise FieldError(f"no field '{spec}'")
        value = row[spec]
        if isinstance(value, list):
            return [_text(item) for item in value]
        if isinstance(value, str):
            return [line.strip() for line in value.splitlines() if line.strip()]
        raise FieldError(f"field '{spec}' holds {type(value).__name__}, not a list of options")
    return [line for line in fill(spec, row).splitlines() if line.strip()]


def load_programs(path: Path) -> dict[str, str]:
    """id -> first program text, all held (a run reads them a chunk at a time: index_programs).
    Records without a usable program are left out (they become no_program records in formulate)."""
    programs = index_programs(path)
    return programs.texts(programs)
