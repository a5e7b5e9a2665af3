"""The options of a run, validated before anything runs."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .datasets import DatasetSpec, get_dataset

Backup = Literal["random", "cot", "none"]


class RunConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    dataset: str
    split: str = "dev"
    out: Path = Path("results/run")
    data_dir: Path | None = None
    limit: int | None = Field(default=None, ge=1)
    workers: int = Field(default=1, ge=1, le=256)
    programs: Path | None = None
    backup: Backup = "random"
    seed: int = 0
    timeout: float | None = Field(default=None, gt=0)
    memory_mb: int = Field(default=2048, ge=64)

    @property
    def spec(self) -> DatasetSpec:
        return get_dataset(self.dataset)

    @property
    def stage_dir(self) -> Path:
        return self.out / self.spec.key

    def stage_file(self, stage: str) -> Path:
        return self.stage_dir / f"{stage}.jsonl"
