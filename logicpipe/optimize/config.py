"""The options of an optimisation run, validated before anything is written."""

from __future__ import annotations

import math
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..data.registry import DatasetSpec, get_dataset, load_task_file


class OptimizeConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    dataset: str = ""  # a built-in dataset, or ...
    task: Path | None = None  # ... a task file
    data_dir: Path | None = None
    model: str  # the model the pipeline runs with (formulate, refine, cot)
    optimizer_model: str | None = None  # judge, gradients and rewrites (default: model)
    base_url: str | None = None
    train_split: str = "train"
    val_split: str = "dev"
    steps: int = Field(default=5, ge=0, le=10_000)
    batch_size: int = Field(default=4, ge=1, le=1000)
    max_calls: int | None = Field(default=None, ge=0)
    max_cost: float | None = Field(default=None, ge=0)
    price_prompt: float | None = Field(default=None, ge=0, le=1e6)
    price_completion: float | None = Field(default=None, ge=0, le=1e6)
    out: Path = Path("results/optimize")
    supervised: bool = True
    z: float = Field(default=2.0, ge=0, le=10)
    seed: int = 0
    workers: int = Field(default=1, ge=1, le=256)
    limit_val: int | None = Field(default=None, ge=2)
    prompts: Path | None = None  # the starting prompt folder (default: the shipped prompts)
    structure: bool = False  # also optimise the pipeline's structure (samples, rounds, backup)
    max_concurrency: int = Field(default=8, ge=1, le=1024)
    llm_timeout: float = Field(default=120.0, gt=0, le=86400)
    max_retries: int = Field(default=5, ge=0, le=50)
    llm_cache: Path | None = None  # default: OUT/llm-cache.sqlite

    @field_validator("max_cost", "price_prompt", "price_completion")
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise ValueError("must be a finite number")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> OptimizeConfig:
        if bool(self.dataset) == (self.task is not None):
            raise ValueError("name a built-in --dataset or a --task file (one of the two)")
        if "test" in (self.train_split, self.val_split):
            raise ValueError("the test split is never used while optimising; choose train and dev splits")
        if self.max_cost is not None and self.price_prompt is None and self.price_completion is None:
            raise ValueError("--max-cost needs --price-prompt and/or --price-completion")
        if self.prompts is not None and not self.prompts.is_dir():
            raise ValueError(f"prompt folder {self.prompts} not found")
        spec = self.spec
        if self.val_split not in spec.splits:
            raise ValueError(f"{spec.key} has no split {self.val_split!r} (it has {', '.join(spec.splits)})")
        return self

    @property
    def spec(self) -> DatasetSpec:
        return load_task_file(self.task) if self.task is not None else get_dataset(self.dataset)

    @property
    def judge(self) -> str:
        return self.optimizer_model or self.model

    @property
    def cache_path(self) -> Path:
        return self.llm_cache or self.out / "llm-cache.sqlite"

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float | None:
        if self.price_prompt is None and self.price_completion is None:
            return None
        return (prompt_tokens * (self.price_prompt or 0) + completion_tokens * (self.price_completion or 0)) / 1e6
