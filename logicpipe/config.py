"""The options of a run, validated before anything runs."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .datasets import DatasetSpec, get_dataset

if TYPE_CHECKING:
    from .llm import LLMSettings

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
    # Language model (formulate, refine, the cot backup, baselines)
    model: str | None = None
    base_url: str | None = None
    max_concurrency: int = Field(default=8, ge=1, le=1024)
    num_samples: int = Field(default=1, ge=1, le=64)
    temperature: float = Field(default=0.0, ge=0, le=2)
    max_tokens: int = Field(default=2048, ge=16)
    max_rounds: int = Field(default=3, ge=0, le=10)
    refine_model: str | None = None
    llm_timeout: float = Field(default=120.0, gt=0)
    max_retries: int = Field(default=5, ge=0, le=50)
    price_prompt: float | None = Field(default=None, ge=0)
    price_completion: float | None = Field(default=None, ge=0)
    llm_cache: Path | None = None

    @model_validator(mode="after")
    def _sampling_needs_temperature(self) -> RunConfig:
        if self.num_samples > 1 and self.temperature == 0:
            raise ValueError("num_samples > 1 needs temperature > 0, or every sample is the same")
        return self

    @property
    def spec(self) -> DatasetSpec:
        return get_dataset(self.dataset)

    @property
    def stage_dir(self) -> Path:
        return self.out / self.spec.key

    def stage_file(self, stage: str) -> Path:
        return self.stage_dir / f"{stage}.jsonl"

    def llm_settings(self, model: str) -> LLMSettings:
        from .llm import LLMSettings

        return LLMSettings(model=model, base_url=self.base_url, max_concurrency=self.max_concurrency,
                           max_retries=self.max_retries, timeout=self.llm_timeout, cache_path=self.llm_cache,
                           price_prompt=self.price_prompt, price_completion=self.price_completion)
