"""The options of an optimisation run, validated before anything is written."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

from ..llm.client import endpoint
from ..prompts import PromptSet, is_paper
from ..stages.config import TaskOptions
from .params import prompt_ids

# The optimiser's own prompts (judge, gradients, rewrites, structure): PromptSet templates, hashed like
# every other and overridable from the --prompts folder (calls.template reads them).
OPTIMIZER_PROMPTS = ("opt-judge", "opt-gradient", "opt-rewrite", "opt-structure")

# The train split that may be missing: the validation split is then cut in two (ProntoQA has only dev).
TRAIN = "train"


class OptimizeConfig(TaskOptions):
    """TaskOptions (dataset, model endpoint, out, ...) and the optimiser's own."""

    model: str  # the model the pipeline runs with (formulate, refine, cot)
    optimizer_model: str | None = None  # judge, gradients and rewrites (default: model)
    train_split: str = TRAIN
    val_split: str = "dev"
    steps: int = Field(default=5, ge=0, le=10_000)
    batch_size: int = Field(default=4, ge=1, le=1000)
    max_calls: int | None = Field(default=None, ge=0)  # and --max-cost, ModelOptions' (with its checks)
    out: Path = Path("results/optimize")
    supervised: bool = True
    z: float = Field(default=2.0, ge=0, le=10)
    limit_val: int | None = Field(default=None, ge=2)
    structure: bool = False  # also optimise the pipeline's structure (samples, rounds, backup)
    # prompts: the starting prompt folder (default: the shipped prompts); llm_cache default: OUT/llm-cache.sqlite
    # The test part (issue 26): a whole split of its own, else a part of --val-split (see splits.py).
    test_split: str | None = None
    limit_test: int | None = Field(default=None, ge=1)
    # Candidates per step, raced on validation by successive halving (1: no race).
    candidates: int = Field(default=2, ge=1, le=16)
    # accuracy: keep a better candidate, or an equally accurate one that costs measurably fewer tokens;
    # cost: keep a candidate that costs measurably fewer tokens and is not worse by the paired test.
    objective: Literal["accuracy", "cost"] = "accuracy"

    @model_validator(mode="after")
    def _consistent(self) -> OptimizeConfig:
        spec = self.check_source()
        if "test" in (self.train_split, self.val_split):
            raise ValueError("the test split is never used while optimising; choose train and dev splits")
        if self.prompts is not None and is_paper(self.prompts):
            raise ValueError("Logic-LM's prompts (--prompts logic-lm) are one block of text with no parts to "
                             "rewrite: optimise from logicpipe's templates (no --prompts) or a folder of them "
                             "(./logic-lm for a folder of that name)")
        if self.prompts is not None and not self.prompts.is_dir():
            raise ValueError(f"prompt folder {self.prompts} not found")
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
        # The optimiser's own templates (opt-*.txt) may be overridden there too; a broken one is refused here.
        prompts = PromptSet(self.prompts)
        prompts.check_overrides([*prompt_ids(spec.prompt, spec.solver), *OPTIMIZER_PROMPTS])
        prompts.identity(*OPTIMIZER_PROMPTS)
        return self

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
                "--z": self.z, "--structure": self.structure, "--test-split": self.test_split,
                "--candidates": self.candidates, "--objective": self.objective}

    @property
    def judge(self) -> str:
        return self.optimizer_model or self.model

    @property
    def cache_path(self) -> Path:
        return self.llm_cache or self.out / "llm-cache.sqlite"
