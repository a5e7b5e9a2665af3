"""The options of a run, validated before anything runs or is written."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..data.registry import DatasetSpec, get_dataset, load_task_file
from ..run.folder import allowed_errors

Backup = Literal["random", "cot", "none"]
# error: repair programs that fail (Logic-LM); semantic: also revise those that execute and keep a
# revision only if the model judges it more faithful to the problem (Logic-LM++).
RefineMode = Literal["error", "semantic"]


def writable(path: Path, folder: bool) -> Path:
    """`path` if it can be made or written as a folder (folder=True) or a file; ValueError when it, or a
    folder above it, is of the wrong kind (checked before anything is written)."""
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
        return path
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise ValueError(f"{parent} is a file, so {path} cannot be made under it")
            break
    return path


class OutputPaths(BaseModel):
    """The checks on where a command writes (its OUT folder and its --llm-cache file), shared by the
    run and optimize configs: one line each, before anything is written."""

    @field_validator("out", check_fields=False)
    @classmethod
    def _out(cls, value: Path) -> Path:
        return writable(value, folder=True)

    @field_validator("llm_cache", check_fields=False)
    @classmethod
    def _cache(cls, value: Path | None) -> Path | None:
        return None if value is None else writable(value, folder=False)


class RunConfig(OutputPaths):
    model_config = ConfigDict(extra="forbid")

    dataset: str = ""  # a built-in dataset, or ...
    task: Path | None = None  # ... a task file describing the user's own
    split: str = ""  # default: the task's first split (dev for the built-ins)
    out: Path = Path("results/run")
    data_dir: Path | None = None
    limit: int | None = Field(default=None, ge=1)
    # Only these problems of the split (in the split's order); `logicpipe optimize` runs minibatches with it.
    ids: list[str] | None = None
    exclude_ids: list[str] | None = None  # all problems of the split but these (`run --exclude-ids FILE`)
    workers: int = Field(default=1, ge=1, le=256)
    programs: Path | None = None
    backup: Backup = "random"
    seed: int = 0
    timeout: float | None = Field(default=None, gt=0, le=86400)
    memory_mb: int = Field(default=2048, ge=64, le=1 << 20)
    executor: Literal["local", "ray"] = "local"
    ray_address: str | None = None
    overwrite: bool = False
    max_errors: str = "10%"
    prompts: Path | None = None
    # Language model (formulate, refine, the cot backup, baselines)
    model: str | None = None
    base_url: str | None = None
    max_concurrency: int = Field(default=8, ge=1, le=1024)
    num_samples: int = Field(default=1, ge=1, le=64)
    temperature: float = Field(default=0.0, ge=0, le=2)
    max_tokens: int = Field(default=2048, ge=16, le=1 << 20)
    max_rounds: int = Field(default=3, ge=0, le=10)
    refine_model: str | None = None
    refine: RefineMode = "error"
    llm_timeout: float = Field(default=120.0, gt=0, le=86400)
    max_retries: int = Field(default=5, ge=0, le=50)
    price_prompt: float | None = Field(default=None, ge=0, le=1e6)
    price_completion: float | None = Field(default=None, ge=0, le=1e6)
    llm_cache: Path | None = None
    # Grammar-constrained decoding of formulate and refine requests (logicpipe/llm/constrain.py).
    constrain: bool = False
    constrain_format: Literal["gbnf", "vllm"] = "gbnf"

    @field_validator("timeout", "llm_timeout", "temperature", "price_prompt", "price_completion")
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise ValueError("must be a finite number")
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
        if self.backup == "cot" and not self.model:
            raise ValueError("--backup cot needs --model (the model answers by chain of thought)")
        if self.refine_model and self.max_rounds == 0:
            raise ValueError("--refine-model needs --max-rounds of at least 1")
        if self.refine == "semantic" and self.max_rounds == 0:
            raise ValueError("--refine semantic needs --max-rounds of at least 1")
        if self.refine == "semantic" and not (self.model or self.refine_model):
            raise ValueError("--refine semantic needs a model (give --model or --refine-model)")
        if bool(self.dataset) == (self.task is not None):
            raise ValueError("name a built-in --dataset or a --task file (one of the two)")
        spec = self.spec
        self.split = self.split or spec.splits[0]
        if self.prompts is None:
            self.prompts = spec.prompts
        return self

    def error_budget(self, total: int) -> int:
        """How many model errors a run of `total` problems may have before it stops (at least one)."""
        return allowed_errors(self.max_errors, total)

    @property
    def spec(self) -> DatasetSpec:
        return load_task_file(self.task) if self.task is not None else get_dataset(self.dataset)

    @property
    def stage_dir(self) -> Path:
        return self.out / self.spec.key

    @property
    def refine_with(self) -> str | None:
        """The model that repairs programs: --refine-model, else --model; None when rounds are off."""
        return (self.refine_model or self.model) if self.max_rounds else None
