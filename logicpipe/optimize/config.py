"""The options of an optimisation run, validated before anything is written."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from pydantic import ConfigDict, Field, field_validator, model_validator

from ..data.registry import DatasetSpec, get_dataset, load_task_file
from ..llm.client import endpoint
from ..prompts import PromptSet, is_paper
from ..stages.config import OutputPaths
from .params import prompt_ids

# The train split that may be missing: the validation split is then cut in two (ProntoQA has only dev).
TRAIN = "train"


class OptimizeConfig(OutputPaths):
    model_config = ConfigDict(extra="forbid")

    dataset: str = ""  # a built-in dataset, or ...
    task: Path | None = None  # ... a task file
    data_dir: Path | None = None
    model: str  # the model the pipeline runs with (formulate, refine, cot)
    optimizer_model: str | None = None  # judge, gradients and rewrites (default: model)
    base_url: str | None = None
    train_split: str = TRAIN
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
    # The test part (issue 26): a whole split of its own, else a part of --val-split (see splits.py).
    test_split: str | None = None
    limit_test: int | None = Field(default=None, ge=1)

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
        if self.prompts is not None and is_paper(self.prompts):
            raise ValueError("Logic-LM's prompts (--prompts logic-lm) are one block of text with no parts to "
                             "rewrite: optimise from logicpipe's templates (no --prompts) or a folder of them "
                             "(./logic-lm for a folder of that name)")
        if self.prompts is not None and not self.prompts.is_dir():
            raise ValueError(f"prompt folder {self.prompts} not found")
        spec = self.spec
        for option, split in (("--val-split", self.val_split), ("--train-split", self.train_split)):
            if split not in spec.splits and (option, split) != ("--train-split", TRAIN):
                raise ValueError(f"{option} {split}: {spec.key} has no such split (it has {', '.join(spec.splits)})")
        if self.test_split is not None:
            if self.test_split not in spec.splits:
                raise ValueError(f"--test-split {self.test_split}: {spec.key} has no such split "
                                 f"(it has {', '.join(spec.splits)})")
            if self.test_split in (self.train_split, self.val_split):
                raise ValueError(f"--test-split {self.test_split} is also the train or validation split; the test "
                                 "problems must be unseen (leave --test-split out to cut them from --val-split)")
        # A folder that overrides no template the optimiser starts from is refused here, before any file.
        PromptSet(self.prompts).check_overrides(prompt_ids(spec.prompt, spec.solver))
        return self

    @property
    def spec(self) -> DatasetSpec:
        return load_task_file(self.task) if self.task is not None else get_dataset(self.dataset)

    @property
    def endpoint(self) -> str:
        return endpoint(self.base_url)

    def identity(self) -> dict[str, Any]:
        """The options that decide what each step does and how it is judged, by the flag that sets them:
        a resume with other values would mix two optimisations in one folder."""
        return {"--dataset": self.spec.key, "--task": self.spec.digest() if self.task is not None else None,
                "--model": self.model, "--optimizer-model": self.judge, "--base-url": self.endpoint,
                "--train-split": self.train_split, "--val-split": self.val_split, "--limit-val": self.limit_val,
                "--batch-size": self.batch_size, "--seed": self.seed, "--unsupervised": not self.supervised,
                "--z": self.z, "--structure": self.structure, "--test-split": self.test_split}

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
