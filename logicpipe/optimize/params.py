"""What the optimiser trains: the prompt templates of a run, each split into components a rewrite can
change one at a time, and the run's structure (samples, refinement rounds, backup).

A template (see logicpipe/prompts) is a system part, a `=== user ===` line and a user part. For the
shipped formulate templates the system part is a one-paragraph task description followed by the grammar
(format); the user part is worked demonstrations ("Example." blocks) followed by the untrained tail that
holds the `{{fields}}`. Learnt principles go under a "Principles:" heading at the end of the system part,
where a later split finds them again. Guides are a list of rules: principles only. A template that fits
none of this is one component, so a user's own prompt can still be optimised as a whole.
"""

from __future__ import annotations

import hashlib
import json
import re
from functools import partial
from importlib import resources
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..core.errors import UsageError
from ..core.records import executed
from ..prompts import PromptSet
from ..runtime.executor import check_solver
from ..runtime.pool import SolverCall, WorkerPool
from ..solvers import get_solver, registry
from ..stages.config import RunConfig

USER_LINE = "=== user ==="
PRINCIPLES_HEADING = "Principles:"
COMPONENTS = ("description", "format", "demonstrations", "principles")
_FIELD = re.compile(r"\{\{(\w+)\}\}")
_NEXT_DEMO = re.compile(r"\n\n(?=Example\b)")
_DEMO_START = re.compile(r"Example\b")
# Bounds for running a demonstration's program: demonstrations are small, so a slow one is a bad one.
_DEMO_SECONDS = 10.0
_DEMO_MEMORY_MB = 1024

Layout = Literal["template", "guide", "whole"]


class PromptComponents(BaseModel):
    model_config = ConfigDict(extra="forbid")
    layout: Layout = "template"
    description: str = ""
    format: str = ""
    principles: str = ""
    demonstrations: list[str] = Field(default_factory=list)
    tail: str = ""  # never trained: it holds the {{fields}} the pipeline fills in

    @property
    def trainable(self) -> tuple[str, ...]:
        if self.layout == "guide":
            return ("principles",)
        if self.layout == "whole":
            return ("description",)
        return COMPONENTS

    def text(self, component: str) -> str:
        """One component as the optimiser sees it (demonstrations as one block, blank-line separated)."""
        self._check_component(component)
        if component == "demonstrations":
            return "\n\n".join(self.demonstrations)
        return str(getattr(self, component))

    def render(self) -> str:
        if self.layout == "whole":
            return self.description
        if self.layout == "guide":
            return f"{USER_LINE}\n{self.principles}\n"
        system = self.description
        if self.format:
            system += "\n\n" + self.format
        if self.principles:
            system += f"\n\n{PRINCIPLES_HEADING}\n{self.principles}"
        user = "\n\n".join(self.demonstrations)
        if user and self.tail:
            user += "\n\n"
        user += self.tail
        return (f"{system}\n" if system else "") + f"{USER_LINE}\n{user}"

    def with_text(self, component: str, text: str) -> PromptComponents:
        self._check_component(component)
        if component == "demonstrations":
            block = text.strip()
            return self.model_copy(update={"demonstrations": _NEXT_DEMO.split(block) if block else []})
        if self.layout == "whole":
            return self.model_copy(update={"description": text if text.endswith("\n") else text + "\n"})
        if component == "principles":
            text = _without_heading(text)
        return self.model_copy(update={component: text.strip()})

    def _check_component(self, component: str) -> None:
        if component not in self.trainable:
            raise UsageError(f"component '{component}' is not trainable here; choose from {', '.join(self.trainable)}")


_HEADING = re.compile(r"\s*[#*\s]*principles\s*:?[*\s]*(?:\n|$)", re.IGNORECASE)


def _without_heading(text: str) -> str:
    """A rewrite of the principles without a leading "Principles:" line: render() writes that heading
    itself, so a rewrite that repeats it would show it twice."""
    found = _HEADING.match(text)
    return text[found.end():] if found else text


def split_template(text: str, guide: bool = False) -> PromptComponents:
    """Components whose render() gives back `text` exactly; a template that does not fit the layout is
    one component (never an error)."""
    candidate = _split_guide(text) if guide else _split_formulate(text)
    if candidate is not None and candidate.render() == text:
        return candidate
    return PromptComponents(layout="whole", description=text)


def _split_guide(text: str) -> PromptComponents | None:
    head = USER_LINE + "\n"
    if not text.startswith(head) or not text.endswith("\n"):
        return None
    return PromptComponents(layout="guide", principles=text[len(head):-1])


def _split_formulate(text: str) -> PromptComponents | None:
    if text.startswith(USER_LINE + "\n"):
        system, user = "", text[len(USER_LINE) + 1:]
    else:
        system, sep, user = text.partition(f"\n{USER_LINE}\n")
        if not sep:
            return None
    principles = ""
    marker = f"\n\n{PRINCIPLES_HEADING}\n"
    if marker in system:
        system, _, principles = system.rpartition(marker)
    description, _, format_ = system.partition("\n\n")
    demonstrations: list[str] = []
    tail = user
    field = _FIELD.search(user)
    if field is not None:
        start = user.rfind("\n\n", 0, field.start())
        region = user[:start] if start >= 0 else ""
        if _DEMO_START.match(region):
            demonstrations, tail = _NEXT_DEMO.split(region), user[start + 2:]
    return PromptComponents(description=description, format=format_, principles=principles,
                            demonstrations=demonstrations, tail=tail)


def template_text(prompts: PromptSet, prompt_id: str) -> str:
    """The file text of a template as a run would find it (the folder's file, else the shipped one)."""
    prompts.get(prompt_id)  # raises the usual error when there is none
    if prompts.folder is not None and (prompts.folder / f"{prompt_id}.txt").is_file():
        return (prompts.folder / f"{prompt_id}.txt").read_text(encoding="utf-8")
    shipped = resources.files("logicpipe.prompts").joinpath("templates").joinpath(f"{prompt_id}.txt")
    return shipped.read_text(encoding="utf-8")


def prompt_ids(formulate: str, solver: str) -> list[str]:
    """The templates a run uses and the optimiser may change."""
    return [formulate, "refine", f"guide-{solver}"]


class PromptParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    prompts: dict[str, PromptComponents]

    @classmethod
    def from_prompt_set(cls, prompts: PromptSet, ids: list[str]) -> PromptParams:
        return cls(prompts={i: split_template(template_text(prompts, i), guide=i.startswith("guide-")) for i in ids})

    def render(self) -> dict[str, str]:
        return {prompt_id: components.render() for prompt_id, components in self.prompts.items()}

    @property
    def hash(self) -> str:
        canonical = json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(canonical.encode()).hexdigest()[:12]

    def component(self, prompt_id: str, component: str) -> str:
        return self._get(prompt_id).text(component)

    def with_component(self, prompt_id: str, component: str, text: str) -> PromptParams:
        updated = self._get(prompt_id).with_text(component, text)
        return PromptParams(prompts={**self.prompts, prompt_id: updated})

    def _get(self, prompt_id: str) -> PromptComponents:
        if prompt_id not in self.prompts:
            raise UsageError(f"no prompt '{prompt_id}' among {', '.join(self.prompts)}")
        return self.prompts[prompt_id]


class Structure(BaseModel):
    """The run's shape, which the structure optimiser may change one MENU step at a time: the nodes of the
    pipeline (several formulations with a vote, refinement rounds, a semantic check that revises programs
    that executed and keeps a revision only when judged more faithful, the chain-of-thought backup) and
    the solver's time limit (None: the dataset's default)."""

    model_config = ConfigDict(extra="forbid")
    MENU: ClassVar[dict[str, list[Any]]] = {"num_samples": [1, 3, 5], "max_rounds": [0, 1, 2, 3],
                                            "backup": ["random", "cot"], "refine": ["error", "semantic"],
                                            "timeout": [None, 5, 15, 60]}
    num_samples: int = Field(default=1, ge=1, le=64)
    max_rounds: int = Field(default=3, ge=0, le=10)
    backup: Literal["random", "cot"] = "random"
    refine: Literal["error", "semantic"] = "error"
    timeout: float | None = Field(default=None, gt=0, le=86400)
    temperature: float | None = Field(default=None, ge=0, le=2)

    @model_validator(mode="after")
    def _temperature(self) -> Structure:
        # Several samples at temperature 0 would all be the same program.
        if self.temperature is None:
            self.temperature = 0.0 if self.num_samples == 1 else 0.7
        if self.num_samples > 1 and self.temperature == 0:
            raise ValueError("num_samples > 1 needs temperature > 0")
        # The semantic check is a refinement round of its own (as `run --refine semantic` requires).
        if self.refine == "semantic" and self.max_rounds == 0:
            raise ValueError("refine='semantic' needs max_rounds of at least 1")
        return self

    @property
    def hash(self) -> str:
        # Fields at their defaults are left out, so a structure keeps the hash (and the run folders) it had
        # before a field was added to the menu.
        data = self.model_dump(mode="json")
        data = {k: v for k, v in data.items() if k not in _LATER or v != _LATER[k]}
        canonical = json.dumps(data, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:12]

    @classmethod
    def off_menu(cls, field: str, value: object) -> str | None:
        """Why a proposed change is not allowed (None when it is on the menu)."""
        if field not in cls.MENU:
            return f"'{field}' is not a structure option; choose from {', '.join(cls.MENU)}"
        if isinstance(value, bool) or value not in cls.MENU[field]:
            return f"{field}={value!r} is not on the menu {cls.MENU[field]}"
        return None

    def conflict(self, field: str, value: object) -> str | None:
        """Why an on-menu change cannot be made from this structure (None when it can)."""
        try:
            self.with_change(field, value)
        except ValueError as exc:  # pydantic's ValidationError is a ValueError
            return next((e["msg"].removeprefix("Value error, ") for e in getattr(exc, "errors", lambda: [])()),
                        str(exc))
        return None

    def with_change(self, field: str, value: object) -> Structure:
        reason = self.off_menu(field, value)
        if reason is not None:
            raise UsageError(reason)
        data = {**self.model_dump(), field: value}
        if field == "num_samples":
            data["temperature"] = None  # follows the number of samples again
        return Structure.model_validate(data)

    def flags(self) -> str:
        """The `logicpipe run` options that give a run this structure."""
        extra = (" --refine semantic" if self.refine == "semantic" else "") + \
                (f" --timeout {self.timeout:g}" if self.timeout is not None else "")
        return (f"--num-samples {self.num_samples} --temperature {self.temperature:g} --max-rounds {self.max_rounds} "
                f"--backup {self.backup}{extra}")

    def apply(self, config: RunConfig) -> RunConfig:
        """The run configuration with this structure (validated again, like any other RunConfig)."""
        update = {"num_samples": self.num_samples, "max_rounds": self.max_rounds, "backup": self.backup,
                  "temperature": self.temperature, "refine": self.refine}
        if self.timeout is not None:
            update["timeout"] = self.timeout
        return RunConfig.model_validate({**config.model_dump(), **update})


# Structure fields added after the first three, with their defaults (see Structure.hash).
_LATER: dict[str, Any] = {"refine": "error", "timeout": None}


def demo_program(demonstration: str) -> str | None:
    """The program of a demonstration: everything after its last line that reads "Program:"."""
    lines = demonstration.split("\n")
    marks = [i for i, line in enumerate(lines) if line.strip() == "Program:"]
    if not marks:
        return None
    program = "\n".join(lines[marks[-1] + 1:]).strip()
    return program + "\n" if program else None


def _halves(text: str) -> tuple[str, str] | None:
    lines = text.split("\n")
    marks = [i for i, line in enumerate(lines) if line == USER_LINE]
    if len(marks) != 1:
        return None
    return "\n".join(lines[:marks[0]]), "\n".join(lines[marks[0] + 1:])


def check_candidate(old: PromptParams, new: PromptParams, prompt_id: str, solver: str) -> str | None:
    """Why `new` may not replace `old` (None when it may): a variable lost or added, a broken template,
    or a new or changed demonstration whose program does not parse and run in the dataset's solver."""
    if prompt_id not in old.prompts or prompt_id not in new.prompts:
        return f"no prompt '{prompt_id}' in both prompt sets"
    old_halves, new_halves = _halves(old.prompts[prompt_id].render()), _halves(new.prompts[prompt_id].render())
    if new_halves is None:
        return f"the template must have exactly one '{USER_LINE}' line"
    if old_halves is None:  # the start template is broken itself: compare fields over the whole text
        old_halves = ("", old.prompts[prompt_id].render())
    old_user, new_user = set(_FIELD.findall(old_halves[1])), set(_FIELD.findall(new_halves[1]))
    if old_user - new_user:
        return "variables dropped: " + ", ".join(f"{{{{{v}}}}}" for v in sorted(old_user - new_user))
    if new_user - old_user:
        return "unknown variables added: " + ", ".join(f"{{{{{v}}}}}" for v in sorted(new_user - old_user))
    system_added = set(_FIELD.findall(new_halves[0])) - set(_FIELD.findall(old_halves[0]))
    if system_added:
        return "variables in the system part are never filled in: " + ", ".join(sorted(system_added))
    # Demonstrations the old template had already are not run again: a start template's own example
    # that does not run must not block every rewrite of its other components.
    known = set(old.prompts[prompt_id].demonstrations)
    return check_demonstrations(new.prompts[prompt_id].demonstrations, solver, skip=known)


def check_demonstrations(demonstrations: list[str], solver: str, skip: set[str] | None = None) -> str | None:
    """Why one of the demonstrations is unfit (None when each one's program parses and runs in `solver`);
    those in `skip` are taken as they are."""
    programs: dict[str, str] = {}
    for number, demonstration in enumerate(demonstrations, start=1):
        if skip and demonstration in skip:
            continue
        program = demo_program(demonstration)
        if program is None:
            return f"demonstration {number} has no program after a 'Program:' line"
        programs[str(number)] = program
    if not programs:
        return None
    get_solver(solver).check()  # a missing solver is the user's to fix, not a reason to reject every candidate
    limits = {"seconds": _DEMO_SECONDS, "memory_mb": _DEMO_MEMORY_MB}
    tasks = [SolverCall(key, {"solver": solver, "program": program, "limits": limits}, _DEMO_SECONDS * 1.5 + 5)
             for key, program in programs.items()]
    failures: dict[int, str] = {}
    # Demonstrations come from a model: they run in the isolated worker pool like any program.
    with WorkerPool("logicpipe.solvers:execute_task", 1, _DEMO_MEMORY_MB, preload=[registry.find(solver).module],
                    setup=partial(check_solver, solver)) as pool:
        for outcome in pool.map(tasks):
            if outcome.status != "ok":
                failures[int(outcome.key)] = f"{outcome.status}: {outcome.message}".strip()
            elif not executed(outcome.value.error):
                failures[int(outcome.key)] = f"{outcome.value.error.category.value}: {outcome.value.error.message}"
    if failures:
        number = min(failures)
        return f"demonstration {number}'s program does not run in the {solver} solver ({failures[number]})"
    return None
