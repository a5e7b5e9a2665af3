"""A method is data: a small spec (package data in data/methods/, or a user's JSON file) naming how a
published method runs through the one pipeline: the formalism (the task's own, a named solver, or none
for a method that answers directly) and the program syntax its solver reads, samples and temperature,
the vote over samples, the refinement policy and the backup; with its citation, the paper's own figures
and what of it logicpipe reproduces. `--method` turns a spec into run options; the stages never learn
which method they serve.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from ..core.errors import DataError, UsageError, did_you_mean

_SHIPPED = Path(__file__).parent / "methods"
# A prompt id names a template file in the package or a --prompts folder: a plain file name, no path.
_PROMPT_ID = r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$"


class Figure(BaseModel):
    model_config = ConfigDict(extra="forbid")
    dataset: str
    model: str
    accuracy: float = Field(ge=0, le=100)  # percent, as the paper prints it
    where: str


class Step(BaseModel):
    """One prompted step of a solver-free method (SymbCoT's translate, plan, solve, verify). Its template
    sees the problem's fields and, as {{<name>}}, the reply of every earlier step."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    # A prompt id; `{dataset}` in it is replaced by the task's key (symbcot-{dataset}-plan).
    prompt: str = Field(pattern=r"^[A-Za-z0-9_{][A-Za-z0-9_.{}-]*$")
    answers: bool = False  # whether its reply is read for the answer (the last that gives one is taken)
    # Stop sequences sent with its requests: the reply ends where the model writes one (SymbCoT sends
    # "------", its prompts' separator between examples).
    stop: list[str] = []


class MethodSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9.+-]*$")
    title: str
    citation: str
    url: str = ""
    # "task": the dataset's own formalism; a solver name (fol, lp, ...); None: no solver (a baseline).
    solver: str | None
    syntax: Literal["logic-lm", "linc"] = "logic-lm"
    baseline: Literal["standard", "cot", "chain"] | None = None
    # The datasets (task keys) the method has prompts for; empty: every dataset.
    datasets: list[str] = []
    # A solver method's own formulate prompt for each dataset (SatLM's, LINC's); empty: the task's own.
    prompts: dict[str, Annotated[str, Field(pattern=_PROMPT_ID)]] = {}
    # A solver-free method's chain of prompted steps (baseline "chain").
    steps: list[Step] = []
    samples: int = Field(default=1, ge=1, le=64)
    temperature: float = Field(default=0.0, ge=0, le=2)
    # The most common verdict among the samples that gave one, ties to the first seen (LINC's
    # Counter.most_common and self-consistency alike): the one vote rule the pipeline has.
    vote: Literal["majority"] = "majority"
    refine: Literal["none", "error", "semantic"] = "none"
    max_rounds: int = Field(default=0, ge=0, le=10)
    backup: Literal["random", "cot", "none"] = "random"
    figures: list[Figure] = []
    reproduced: str = ""
    _path: Path | None = PrivateAttr(default=None)  # a user's spec file (None: shipped)

    @property
    def path(self) -> Path | None:
        return self._path

    @model_validator(mode="after")
    def _consistent(self) -> MethodSpec:
        if (self.solver is None) != (self.baseline is not None):
            raise ValueError("a method either names a solver ('task' or a solver name) or is a baseline "
                             "(standard or cot), not both or neither")
        if self.samples > 1 and self.temperature == 0:
            raise ValueError("samples > 1 needs temperature > 0, or every sample is the same")
        if (self.baseline == "chain") != bool(self.steps):
            raise ValueError("a method with steps has baseline 'chain', and a 'chain' method has steps")
        if self.steps and not any(step.answers for step in self.steps):
            raise ValueError("a chain needs a step whose reply is read for the answer (answers: true)")
        if len({step.name for step in self.steps}) != len(self.steps):
            raise ValueError("two steps share a name")
        if self.prompts and self.solver is None:
            raise ValueError("prompts are a solver method's formulate prompts; a baseline has none")
        if (self.refine == "none") != (self.max_rounds == 0):
            raise ValueError("refine 'none' goes with max_rounds 0, and 'error' or 'semantic' with at least 1")
        return self

    def formulate_prompt(self, dataset: str) -> str | None:
        """The method's own formulate prompt for the dataset (None: the task's own)."""
        return self.prompts.get(dataset)

    def step_prompts(self, dataset: str) -> list[str]:
        return [step.prompt.replace("{dataset}", dataset) for step in self.steps]

    def run_options(self) -> dict:
        """The run options the method sets (RunConfig field names)."""
        options: dict = {"num_samples": self.samples, "temperature": self.temperature,
                         "max_rounds": self.max_rounds, "backup": self.backup}
        if self.refine != "none":
            options["refine"] = self.refine
        if self.solver not in (None, "task"):
            options["formalism"] = self.solver
        return options


@cache
def shipped() -> dict[str, MethodSpec]:
    return {spec.name: spec for spec in (_read(path, shipped=True) for path in sorted(_SHIPPED.glob("*.json")))}


def load_method(name: str) -> MethodSpec:
    """A shipped method by name, or a spec file (a path ending .json); one-line errors otherwise."""
    if name.endswith(".json") or "/" in name:
        path = Path(name).expanduser()
        if not path.is_file():
            raise UsageError(f"method file {path} not found")
        return _read(path)
    known = shipped()
    if name not in known:
        raise UsageError(f"unknown method '{name}'{did_you_mean(name, list(known))}; choose from "
                         f"{', '.join(known)}, or give a spec file (name.json)")
    return known[name]


def _read(path: Path, shipped: bool = False) -> MethodSpec:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"{path}: not a JSON method spec ({exc})") from None
    try:
        spec = MethodSpec.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(map(str, first["loc"])) or "spec"
        if first["type"] == "extra_forbidden":
            known = list(MethodSpec.model_fields)
            message = f"unknown key{did_you_mean(str(first['loc'][-1]), known)}; the keys are {', '.join(known)}"
        else:
            message = str(first["msg"]).removeprefix("Value error, ")
        raise DataError(f"{path}: {where}: {message}") from None
    if not shipped:
        spec._path = path.absolute()
    return spec


def method_name(method: str) -> str:
    """A run's method (a shipped name, or a spec file's path) as its folders name it."""
    return load_method(method).name
