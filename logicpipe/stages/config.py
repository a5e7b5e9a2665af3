"""The options of a run, validated before anything runs or is written."""

from __future__ import annotations

import math
import os
import tempfile
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from ..core.errors import DataError, LogicPipeError
from ..data import index_programs
from ..data.gold import gold_programs, is_gold
from ..data.registry import DatasetSpec, get_dataset, load_task_file, solver_name
from ..runtime.folder import allowed_errors

# The stages in pipeline order (runner.PIPELINE maps each to its module's run).
STAGES = ("formulate", "solve", "refine", "interpret", "evaluate")
Backup = Literal["random", "cot", "none"]
# error: repair programs that fail (Logic-LM); semantic: also revise those that execute and keep a
# revision only if the model judges it more faithful to the problem (Logic-LM++).
RefineMode = Literal["error", "semantic"]


# The seeds a record can store: JSON readers take integers of up to 64 bits.
_SEED_BOUND = 2**63


def writable(path: Path, folder: bool, probe: bool = True) -> Path:
    """`path` if it can be made or written as a folder (folder=True) or a file; ValueError when it, or a
    folder above it, is of the wrong kind, or (probe) nothing can be made where it would go (a read-only
    disk, /proc): checked before anything is written."""
    for where in (path, *path.parents):
        if where.is_symlink() and not where.exists():  # mkdir and open would fail on it midway
            raise ValueError(f"{where} is a link to {os.readlink(where)}, which does not exist")
        if where.exists():
            break
    if path.exists():
        if folder and not path.is_dir():
            raise ValueError(f"{path} is a file, not a folder")
        if not folder and path.is_dir():
            raise ValueError(f"{path} is a folder, not a file")
    else:
        for parent in path.parents:
            if parent.exists():
                if not parent.is_dir():
                    raise ValueError(f"{parent} is a file, so {path} cannot be made under it")
                break
    if probe:
        _probe(path if folder and path.is_dir() else next(p for p in path.parents if p.exists()), path)
    return path


def _probe(folder: Path, path: Path) -> None:
    """Make and remove an empty folder in `folder`: the one sure test that `path` can be written there
    (permission bits say nothing of a read-only mount or of /proc, and nothing to root)."""
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".logicpipe-probe-", dir=folder))
    except OSError as exc:
        raise ValueError(f"{path} cannot be written: nothing can be made in {folder} ({exc.strerror}); "
                         "choose a folder you can write to") from None


def _writes(info: ValidationInfo) -> bool:
    """Whether the command writes where its options say (`validate` reads only: no write probe)."""
    return bool((info.context or {}).get("writes", True))


class ModelOptions(BaseModel):
    """The options of every command that asks a model and writes a folder (run and its stages, optimize,
    kb batches), each with its checks, declared once: one line each, before anything is written."""

    model_config = ConfigDict(extra="forbid")

    out: Path
    model: str | None = None
    base_url: str | None = None
    max_concurrency: int = Field(default=8, ge=1, le=1024)
    llm_timeout: float = Field(default=120.0, gt=0, le=86400)
    max_retries: int = Field(default=5, ge=0, le=50)
    llm_cache: Path | None = None
    price_prompt: float | None = Field(default=None, ge=0, le=1e6)
    price_completion: float | None = Field(default=None, ge=0, le=1e6)
    # The spending cap (llm/budget.py Budget, the one gate): no new request once this much was spent
    # (at the prices) or this many tokens were used, counted over the runs into the same folder.
    max_cost: float | None = Field(default=None, ge=0)
    max_tokens_total: int | None = Field(default=None, ge=0)
    # Offline batch files (llm/batchfile.py): the requests the cache cannot answer go to this file, in
    # the OpenAI batch input format, instead of to a server; an output file of that format (vllm
    # run-batch -o) is read into the cache first.
    batch_export: Path | None = None
    batch_import: Path | None = None
    # A provider's batch API (llm/batchapi.py): the requests the cache cannot answer go out as batches
    # of at most batch_requests lines (--batch-size), polled at most batch_poll seconds apart until
    # each ends, for at most batch_timeout seconds a command; their ids kept in the run folder.
    batch: bool = False
    batch_requests: int = Field(default=50_000, ge=1, le=50_000)  # the OpenAI API's ceiling
    batch_timeout: float = Field(default=86400.0, gt=0, le=30 * 86400)
    batch_poll: float = Field(default=30.0, gt=0, le=3600)
    # What a batch costs against the same requests sent one by one (providers' batch APIs: about half):
    # metrics show the cost at that price beside the tokens for a --batch or --batch-export run.
    batch_discount: float = Field(default=0.5, ge=0, le=1)
    prompts: Path | None = None

    @field_validator("out")
    @classmethod
    def _out(cls, value: Path, info: ValidationInfo) -> Path:
        return writable(value, folder=True, probe=_writes(info))

    @field_validator("llm_cache", "batch_export")
    @classmethod
    def _file(cls, value: Path | None, info: ValidationInfo) -> Path | None:
        return None if value is None else writable(value, folder=False, probe=_writes(info))

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if not value:
            return None  # an empty OPENAI_BASE_URL means none
        try:
            parts = urlsplit(value)
            port_ok = parts.port is None or parts.port > 0
        except ValueError:
            parts, port_ok = None, False
        spaced = any(char.isspace() or not char.isprintable() for char in value)  # two URLs a line apart
        if spaced or parts is None or parts.scheme not in ("http", "https") or not parts.hostname or not port_ok:
            raise ValueError(f"{value!r} is not an http(s) URL; give one such as http://localhost:8000/v1")
        return value

    @field_validator("llm_timeout", "price_prompt", "price_completion", "max_cost", "batch_timeout", "batch_poll",
                     "batch_discount")
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        return finite(value)

    @model_validator(mode="after")
    def _priced(self) -> ModelOptions:
        if self.max_cost is not None and self.price_prompt is None and self.price_completion is None:
            raise ValueError("--max-cost needs --price-prompt and/or --price-completion")
        if self.batch_import is not None and self.batch_export is None:
            raise ValueError("--batch-import needs --batch-export FILE: the file whose requests the output answers "
                             "(and where the next round's requests go)")
        if self.batch and not self.model:
            raise ValueError("--batch sends model requests: give --model")
        if self.batch and self.batch_export is not None:
            raise ValueError("--batch sends the requests to the provider's batch API, --batch-export writes them to a "
                             "file: give one or the other")
        if self.batch and self.capped:
            raise ValueError("--batch pays for whole batches, so a spending cap cannot stop between requests: "
                             "give one or the other")
        if self.batch_export is not None and self.capped:
            raise ValueError("--batch-export sends nothing, so a spending cap has nothing to stop: give one or the other")
        if self.batch_import is not None and self.batch_export is not None:
            from ..llm.batchfile import output_lines

            try:
                output_lines(self.batch_import, self.batch_export)
            except LogicPipeError as exc:
                raise ValueError(str(exc)) from None
        return self

    @field_validator("batch_import")
    @classmethod
    def _import(cls, value: Path | None) -> Path | None:
        if value is not None and not value.is_file():
            raise ValueError(f"{value}: no such file (the output of running the --batch-export file)")
        return value

    @property
    def capped(self) -> bool:
        """Whether a spending cap (--max-cost, --max-tokens-total) bounds the command's requests."""
        return self.max_cost is not None or self.max_tokens_total is not None

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float | None:
        """What the tokens cost at --price-prompt and --price-completion (per million); None without prices."""
        if self.price_prompt is None and self.price_completion is None:
            return None
        return (prompt_tokens * (self.price_prompt or 0) + completion_tokens * (self.price_completion or 0)) / 1e6


class TaskOptions(ModelOptions):
    """ModelOptions for commands that run the pipeline on a dataset's problems (run, optimize)."""

    dataset: str = ""  # a built-in dataset, or ...
    task: Path | None = None  # ... a task file describing the user's own
    # Another installed solver's formalism than the task's own (run -d logicaldeduction --formalism asp):
    # its own prompt (<prompt>-<formalism>.txt), grammar and solver; None or the task's own: the task's.
    formalism: str | None = None
    data_dir: Path | None = None
    seed: int = 0
    workers: int = Field(default=1, ge=1, le=256)

    @field_validator("formalism")
    @classmethod
    def _formalism(cls, value: str | None) -> str | None:
        return solver_name(value) if value else None

    @property
    def solver(self) -> str:
        """The solver the run uses: --formalism, else the task's."""
        return self.formalism or self.spec.solver

    @property
    def other_formalism(self) -> str | None:
        """--formalism when it is not the task's own (it changes the prompt and the run's identity)."""
        return self.formalism if self.formalism and self.formalism != self.spec.solver else None

    @field_validator("seed")
    @classmethod
    def _seed(cls, value: int) -> int:
        if not -_SEED_BOUND < value < _SEED_BOUND:
            raise ValueError("give a whole number of at most 18 digits (a record stores no larger)")
        return value

    def check_source(self) -> DatasetSpec:
        """The task the options name; ValueError unless exactly one of --dataset and --task is given."""
        if bool(self.dataset) == (self.task is not None):
            raise ValueError("name a built-in --dataset or a --task file (one of the two)")
        return self.spec

    @property
    def spec(self) -> DatasetSpec:
        return load_task_file(self.task) if self.task is not None else get_dataset(self.dataset)


_FLAGS = {"batch-requests": "batch-size"}


def invalid_options(exc: ValidationError) -> LogicPipeError:
    """One line for options that an options model refused."""
    first = exc.errors()[0]
    where = ".".join(map(str, first["loc"])).replace("_", "-")
    where = _FLAGS.get(where, where)  # a field named apart from its option
    message = str(first["msg"]).removeprefix("Value error, ")
    return LogicPipeError(f"invalid option{' --' + where if where else ''}: {message}")


def finite(value: float | None) -> float | None:
    if value is not None and not math.isfinite(value):
        raise ValueError("must be a finite number")
    return value


class RunConfig(TaskOptions):
    split: str = ""  # default: the task's first split (dev for the built-ins)
    out: Path = Path("results/run")
    limit: int | None = Field(default=None, ge=1)
    # Only these problems of the split (in the split's order); `logicpipe optimize` runs minibatches with it.
    ids: list[str] | None = None
    exclude_ids: list[str] | None = None  # all problems of the split but these (`run --exclude-ids FILE`)
    subset: str | None = None  # LogicBench: a logic type or logic type/pattern (data/logicbench.py)
    programs: Path | None = None
    backup: Backup = "random"
    timeout: float | None = Field(default=None, gt=0, le=86400)
    memory_mb: int = Field(default=2048, ge=64, le=1 << 20)
    # Accept only the grammar Logic-LM's own parsers accept: each named leniency they lack is a parse error.
    strict: bool = False
    executor: Literal["local", "ray"] = "local"
    ray_address: str | None = None
    # Seconds that joining the cluster at ray_address may take before the run stops with one line.
    ray_connect_timeout: float = Field(default=30.0, gt=0, le=3600)
    overwrite: bool = False
    max_errors: str = "10%"
    # Language model (formulate, refine, the cot backup, baselines); the endpoint's options are ModelOptions'.
    num_samples: int = Field(default=1, ge=1, le=64)
    # --epochs N: the run N times, epoch k > 1 into OUT/epoch-k/ with the sampling seed k (stages/epochs.py).
    epochs: int = Field(default=1, ge=1, le=100)
    epoch: int = Field(default=1, ge=1, le=100)  # which of them this config runs
    temperature: float = Field(default=0.0, ge=0, le=2)
    max_tokens: int = Field(default=2048, ge=16, le=1 << 20)
    max_rounds: int = Field(default=3, ge=0, le=10)
    refine_model: str | None = None
    refine: RefineMode = "error"
    # A published method (--method: a shipped name or a spec file's absolute path; stages/methods.py set
    # its options): where it has a formulate prompt of its own for the task, the run uses that one.
    method: str | None = None
    # Grammar-constrained decoding of formulate and refine requests (logicpipe/llm/constrain.py).
    constrain: bool = False
    constrain_format: Literal["gbnf", "vllm"] = "gbnf"

    @field_validator("timeout", "temperature", "ray_connect_timeout")
    @classmethod
    def _finite_run(cls, value: float | None) -> float | None:
        return finite(value)

    @field_validator("programs")
    @classmethod
    def _programs(cls, value: Path | None) -> Path | None:
        """The file (or folder) is checked and indexed now (the index is kept for formulate), so a wrong one
        stops the run here."""
        if value is None or is_gold(value):
            return value  # `gold`: the dataset's own annotations, resolved once the task is known
        try:
            index_programs(value)  # Logic-LM's JSON, a JSONL file or a folder of program files
        except DataError as exc:
            raise ValueError(str(exc)) from None
        except OSError as exc:
            raise ValueError(f"{value} cannot be read ({exc.strerror})") from None
        return value

    @field_validator("max_errors")
    @classmethod
    def _budget(cls, value: str) -> str:
        allowed_errors(value, 1)  # ValueError for anything but a count or a percentage
        return value.strip()

    @model_validator(mode="after")
    def _consistent(self) -> RunConfig:
        # Every rule that involves more than one option is checked here, before any file is written.
        if self.num_samples > 1 and self.temperature == 0:
            raise ValueError("num_samples > 1 needs temperature > 0, or every sample is the same")
        if self.epochs > 1 and (self.temperature == 0 or self.programs is not None or not self.model):
            raise ValueError("--epochs above 1 needs --model and --temperature above 0: a replay, or a model "
                             "at temperature 0, gives the same answers in every epoch")
        if self.backup == "cot" and not self.model:
            raise ValueError("--backup cot needs --model (the model answers by chain of thought)")
        if self.refine_model and self.max_rounds == 0:
            raise ValueError("--refine-model needs --max-rounds of at least 1")
        if self.refine == "semantic" and self.max_rounds == 0:
            raise ValueError("--refine semantic needs --max-rounds of at least 1")
        if self.refine == "semantic" and not (self.model or self.refine_model):
            raise ValueError("--refine semantic needs a model (give --model or --refine-model)")
        spec = self.check_source()
        self.split = self.split or spec.splits[0]
        if self.subset:
            from ..data.logicbench import check_subset

            try:
                self.subset = check_subset(spec, self.subset)
            except LogicPipeError as exc:
                raise ValueError(str(exc)) from None
        if is_gold(self.programs):
            if self.other_formalism:
                raise ValueError(f"--programs gold: the gold programs are first-order logic; drop --formalism "
                                 f"{self.formalism}")
            try:  # the annotations converted into a programs file, replayed as one
                self.programs = gold_programs(spec, self.split, self.data_dir)
            except DataError as exc:
                raise ValueError(f"--programs gold: {exc}") from None
        if self.prompts is None:
            self.prompts = spec.prompts
        return self

    def error_budget(self, total: int) -> int:
        """How many model errors a run of `total` problems may have before it stops (at least one)."""
        return allowed_errors(self.max_errors, total)

    @property
    def stage_dir(self) -> Path:
        return self.out / self.spec.key

    @property
    def sample_seed(self) -> int | None:
        """The seed sampled requests carry: none in the first epoch (its requests, cache keys and records
        are those of a run without --epochs), the epoch's number after it."""
        return None if self.epoch == 1 else self.epoch

    @property
    def method_prompt(self) -> str | None:
        """The method's own formulate prompt for this task, if it has one (SatLM's, LINC's)."""
        if self.method is None:
            return None
        from ..data.methods import load_method

        return load_method(self.method).formulate_prompt(self.spec.key)

    @property
    def refine_with(self) -> str | None:
        """The model that repairs programs: --refine-model, else --model; None when rounds are off."""
        return (self.refine_model or self.model) if self.max_rounds else None
