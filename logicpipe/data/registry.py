"""Task files: a YAML or JSON file describes a dataset (its source, split, field mapping, answer space,
solver and prompts). The five built-in datasets are task files too (tasks/*.json), validated when first
used; the pinned Logic-LM download is described in source.json."""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from functools import cache, lru_cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..core.errors import DataError, PrerequisiteError, UsageError, did_you_mean
from ..core.jsonl import json_fault
from ..core.task import AnswerSpace

# Long spellings of the built-in solvers' names; any installed solver's name (solvers/registry.py) is valid.
ALIASES = {"logic-programming": "lp", "first-order-logic": "fol", "answer-set-programming": "asp"}
_PAPER_ORDER = ("prontoqa", "proofwriter", "folio", "logicaldeduction", "ar-lsat")
Format = Literal["logic-lm", "jsonl", "csv", "json", "hf", "logicbench"]
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_NAME_RUN = re.compile(r"[^A-Za-z0-9._-]+")


class SourceSpec(BaseModel):
    repository: str
    commit: str
    base_url: str
    remote_paths: dict[str, str]
    sha256: dict[str, str]


class DataSource(BaseModel):
    """Where the rows come from. `path` may hold {split}; relative paths are relative to the task file."""

    model_config = ConfigDict(extra="forbid")
    format: Format
    path: str | None = None  # a file (jsonl/csv/json), a folder (logic-lm, a saved HF dataset) or an HF name
    folder: str | None = None  # logic-lm: the dataset's folder under data/ (FOLIO, AR-LSAT, ...)
    config: str | None = None  # hf: the configuration name
    data_files: str | list[str] | dict[str, str | list[str]] | None = None  # hf: passed to load_dataset
    records: str | None = None  # json: the key holding the list of rows, when the file is an object


class Fields(BaseModel):
    """Each entry is a field name, or a template such as "{premises}\\n{extra}" filled from the row.
    `options` may also be a list of templates, one per option."""

    model_config = ConfigDict(extra="forbid")
    id: str = "id"
    context: str = "context"
    question: str = "question"
    options: str | list[str] | None = "options"
    answer: str | None = "answer"


class DatasetSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    key: str = Field(alias="name")
    title: str = ""  # the dataset's own spelling (Logic-LM's folder name); defaults to the name
    aliases: list[str] = []
    description: str = ""
    source: DataSource
    splits: list[str] = ["dev"]
    fields: Fields = Fields()
    answer_space: AnswerSpace = "options"
    solver: str = Field(alias="formalism")
    closed_world: bool = False
    timeout: float = Field(default=30.0, gt=0)
    prompt: str = ""  # id of the formulate prompt; defaults to the name
    prompts: Path | None = None  # a folder of prompt templates (relative to the task file)
    licence: str = ""  # what `logicpipe list` says of the data's licence (built-ins beyond Logic-LM's)
    sizes: dict[str, int] = {}  # problems per split, as `logicpipe list` shows them
    base: Path | None = Field(default=None, exclude=True)  # the task file's folder

    @field_validator("key")
    @classmethod
    def _key(cls, value: str) -> str:
        # The name is the run's folder and part of its files' names: plain ASCII, no path separators.
        if not _NAME.fullmatch(value):
            plain = _NAME_RUN.sub("-", unicodedata.normalize("NFKD", value).encode("ascii", "ignore").decode())
            plain = plain.strip("-._")
            hint = f" (e.g. '{plain}')" if plain and _NAME.fullmatch(plain) else ""
            raise ValueError(f"{value!r} cannot name a task: a name becomes the run's folder, so it takes ASCII "
                             f"letters, digits, '.', '_' and '-' only, starting with a letter or digit{hint}")
        return value

    @field_validator("solver", mode="before")
    @classmethod
    def _solver(cls, value: object) -> object:
        return solver_name(value) if isinstance(value, str) else value

    def model_post_init(self, context: object) -> None:
        self.title = self.title or self.key
        self.prompt = self.prompt or self.key
        if self.prompts is not None and self.base is not None and not self.prompts.is_absolute():
            self.prompts = self.base / self.prompts

    @property
    def name(self) -> str:
        return self.title

    def digest(self) -> str:
        """What decides the problems and how they are solved (prompt texts are recorded per stage)."""
        text = self.model_dump_json(exclude={"base", "prompts", "description", "aliases", "licence", "sizes"})
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def local(self, path: str) -> Path:
        """A path of the task file, relative to the file's folder."""
        chosen = Path(path).expanduser()
        return chosen if chosen.is_absolute() or self.base is None else self.base / chosen


def solver_name(value: str) -> str:
    """An installed solver's name (or a long spelling of a built-in's); ValueError naming those installed."""
    from ..solvers import registry

    name = ALIASES.get(value.lower(), value.lower())
    installed = registry.names()
    if not installed:
        registry.find(name)  # PrerequisiteError: logicpipe is installed without its entry points
    if name not in installed:
        raise ValueError(f"unknown formalism '{value}'{did_you_mean(name, installed + list(ALIASES))}; "
                         f"choose from {', '.join(installed)}")
    return name


def _normalise(name: str) -> str:
    return name.lower().replace("-", "").replace("_", "").replace(" ", "")


def _read(path: Path) -> dict:
    text = _text(path)
    if path.suffix.lower() == ".json":
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DataError(f"{path}: {json_fault(exc)}") from None
    else:
        try:
            import yaml
        except ImportError:
            raise PrerequisiteError("YAML task files need PyYAML: pip install pyyaml") from None
        try:
            # libyaml's loader where PyYAML has it: the same documents, read several times faster.
            raw = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506 - a safe loader
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" at line {mark.line + 1}" if mark is not None else ""
            raise DataError(f"{path}: malformed YAML{where} ({getattr(exc, 'problem', exc)})") from None
    if not isinstance(raw, dict):
        raise DataError(f"{path}: a task file holds a mapping (name, source, fields, ...)")
    return raw


def _text(path: Path) -> str:
    """A task file's text; a binary file or one that is not UTF-8 is one DataError saying so."""
    data = path.read_bytes()
    if b"\x00" in data[:8192]:  # a NUL: an executable, an archive, UTF-16 text
        raise DataError(f"{path}: a binary file, not a task file (a task file is YAML or JSON text)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text (byte {exc.start}); a task file is YAML or JSON text in "
                        "UTF-8") from None


def load_task_file(path: Path | str) -> DatasetSpec:
    """Read and check a task file; every mistake is one line naming the file and the key. A file is
    read once for as long as it is unchanged (a run asks for its task many times)."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise UsageError(f"task file {path} not found")
    return _task_file(path, path.stat().st_mtime_ns, path.stat().st_size)


@lru_cache(maxsize=64)
def _task_file(path: Path, mtime_ns: int, size: int) -> DatasetSpec:
    raw = _read(path)
    try:
        return DatasetSpec.model_validate({**raw, "base": path.resolve().parent})
    except ValidationError as exc:
        errors = exc.errors()
        # A misspelt key is the likeliest cause of any other error (a required key then seems absent).
        first = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
        where = ".".join(map(str, first["loc"])) or "file"
        message = str(first["msg"]).removeprefix("Value error, ")
        if first["type"] == "extra_forbidden":
            message = _unknown_key(first["loc"])
        raise DataError(f"{path}: {where}: {message}") from None


_NESTED: dict[str, type[BaseModel]] = {"source": DataSource, "fields": Fields}


def _unknown_key(loc: tuple) -> str:
    model = DatasetSpec if len(loc) == 1 else _NESTED.get(str(loc[0]), DatasetSpec)
    known = [field.alias or name for name, field in model.model_fields.items() if name != "base"]
    return f"unknown key{did_you_mean(str(loc[-1]), known)}; the keys are {', '.join(known)}"


_TASKS = Path(__file__).parent / "tasks"  # JSON: reading a built-in needs no PyYAML (20 ms a command)


@cache
def _builtin() -> dict[str, DatasetSpec]:
    specs = [load_task_file(path) for path in _TASKS.glob("*.json")]
    # The paper's order, which tables and `logicpipe list` keep; any other shipped task after them.
    specs.sort(key=lambda spec: (_PAPER_ORDER.index(spec.key) if spec.key in _PAPER_ORDER else 99, spec.key))
    return {spec.key: spec for spec in specs}


@cache
def source() -> SourceSpec:
    return SourceSpec(**json.loads((Path(__file__).parent / "source.json").read_text())["source"])


def all_datasets() -> list[DatasetSpec]:
    return list(_builtin().values())


def paper_datasets() -> list[DatasetSpec]:
    """Logic-LM's five datasets (whose released programs and baselines `reproduce` replays)."""
    return [spec for spec in all_datasets() if spec.key in _PAPER_ORDER]


def get_dataset(name: str) -> DatasetSpec:
    """Accepts our keys and Logic-LM's spellings (FOLIO, AR-LSAT, LogicalDeduction, ...)."""
    wanted = _normalise(name)
    named = _TASKS / f"{name.lower()}.json"  # a key is its file's name: the other files need no reading
    if name and "/" not in name and named.is_file():
        spec = load_task_file(named)
        if _normalise(spec.key) == wanted:
            return spec
    specs = _builtin()
    for spec in specs.values():
        if wanted in {_normalise(spec.key), _normalise(spec.title), *(_normalise(a) for a in spec.aliases)}:
            return spec
    raise UsageError(f"unknown dataset '{name}'{did_you_mean(name.lower(), list(specs))}; "
                     f"choose from {', '.join(specs)}")
