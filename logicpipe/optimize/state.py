"""An optimisation run on disk (the --out folder), written so that a kill at any moment leaves it
readable and resumable:

- prompts/<hash>/: each prompt set tried, as template files a run reads (`logicpipe run --prompts DIR`),
  with params.json (its components) and structure.json (the structure it was first tried with; state.json
  names the structure of the current and best states). Content-addressed and written once, atomically.
- candidates.jsonl, steps.jsonl, losses.jsonl, gradients.jsonl: append-only, one record per line; a line
  torn by a kill is cut before the next append. A step that was interrupted and then redone leaves its
  first records in the file: the readers keep the last record per step (and problem, and node).
- options.json: the options that decide the optimisation, by flag; a resume with other values is refused
  (--model, --optimizer-model and --base-url are recorded once their model has answered).
- state.json: where the run stands (start, current and best prompt sets, the steps done, the splits),
  replaced atomically after each step; `best` is a link to the best prompt set's folder
  (`logicpipe run --prompts OUT/best`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict

from ..core.errors import DataError, UsageError
from ..core.jsonl import Appender, read_records
from .params import PromptParams, Structure
from .records import CandidateRecord, GradientRecord, LossRecord, StepRecord

R = TypeVar("R", bound=BaseModel)

STATE = "state.json"
OPTIONS = "options.json"
# The options that say where replies come from. A typo in one fails at the first request, so each binds
# the folder only once its model has answered; until then a re-run may correct it.
ENDPOINT = ("--model", "--optimizer-model", "--base-url")
FILES = {"candidates": "candidates.jsonl", "steps": "steps.jsonl", "losses": "losses.jsonl",
         "gradients": "gradients.jsonl"}


class SavedState(BaseModel):
    model_config = ConfigDict(extra="forbid")
    start_hash: str
    current_hash: str
    structure: Structure
    step: int  # steps done
    splits: dict[str, Any]  # what trained and what validated (and whether one split was cut in two)
    val_score: float | None = None  # of the current state
    best_hash: str
    best_structure: Structure
    best_score: float | None = None
    best_dir: str  # prompts/<best_hash>, relative to the folder

    @property
    def carved(self) -> bool:
        return bool(self.splits.get("carved"))


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _last_per_key(records: list[R], key: Callable[[R], Hashable]) -> list[R]:
    """The last record for each key, in the order of those last records."""
    latest: dict[Hashable, tuple[int, R]] = {}
    for index, record in enumerate(records):
        latest[key(record)] = (index, record)
    return [record for _, record in sorted(latest.values(), key=lambda pair: pair[0])]


class OptimizeState:
    def __init__(self, folder: Path):
        self.folder = Path(folder)

    # Prompt sets

    def prompts_dir(self, params_hash: str) -> Path:
        return self.folder / "prompts" / params_hash

    def save_prompts(self, params: PromptParams, structure: Structure) -> Path:
        """prompts/<hash>/ with the rendered templates; a folder already complete is left as it is."""
        folder = self.prompts_dir(params.hash)
        folder.mkdir(parents=True, exist_ok=True)
        for prompt_id, text in params.render().items():
            path = folder / f"{prompt_id}.txt"
            if not path.exists():
                _write_atomic(path, text)
        if not (folder / "structure.json").exists():
            _write_atomic(folder / "structure.json", structure.model_dump_json(indent=2) + "\n")
        # params.json last: its presence says the folder is complete.
        if not (folder / "params.json").exists():
            _write_atomic(folder / "params.json", params.model_dump_json(indent=2) + "\n")
        return folder

    def load_params(self, params_hash: str) -> PromptParams:
        path = self.prompts_dir(params_hash) / "params.json"
        if not path.is_file():
            raise DataError(f"{path} not found: the prompt set {params_hash} was never saved in {self.folder}")
        try:
            params = PromptParams.model_validate_json(path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise DataError(f"{path}: not a prompt set ({str(exc).splitlines()[0]})") from None
        if params.hash != params_hash:
            raise DataError(f"{path}: its content hashes to {params.hash}, not {params_hash}")
        return params

    # Append-only records

    def _append(self, name: str, records: Sequence[BaseModel]) -> None:
        if not records:
            return
        with Appender(self.folder / FILES[name]) as appender:
            for record in records:
                appender.write(record)

    def append_candidates(self, records: Sequence[CandidateRecord]) -> None:
        self._append("candidates", records)

    def append_steps(self, records: Sequence[StepRecord]) -> None:
        self._append("steps", records)

    def append_losses(self, records: Sequence[LossRecord]) -> None:
        self._append("losses", records)

    def append_gradients(self, records: Sequence[GradientRecord]) -> None:
        self._append("gradients", records)

    def read_candidates(self) -> list[CandidateRecord]:
        records = read_records(self.folder / FILES["candidates"], CandidateRecord)
        return _last_per_key(records, lambda r: (r.step, r.kind, r.prompt_id, r.component))

    def read_steps(self) -> list[StepRecord]:
        return sorted(_last_per_key(read_records(self.folder / FILES["steps"], StepRecord), lambda r: r.step),
                      key=lambda r: r.step)

    def read_losses(self) -> list[LossRecord]:
        return _last_per_key(read_records(self.folder / FILES["losses"], LossRecord), lambda r: (r.step, r.id))

    def read_gradients(self) -> list[GradientRecord]:
        return _last_per_key(read_records(self.folder / FILES["gradients"], GradientRecord),
                             lambda r: (r.step, r.id, r.node))

    def steps(self) -> list[StepRecord]:
        return self.read_steps()

    # What the run was made with

    def check_options(self, wanted: dict[str, Any]) -> None:
        """Refuse a resume whose deciding options differ from those the folder was made with (named by
        their flags); record them on the first run (and in a folder made before options.json). The
        ENDPOINT options are recorded only by confirm(), once their model has answered."""
        made = self._options()
        differ = [flag for flag, value in wanted.items() if flag in made and made[flag] != value]
        if {"--model", "--optimizer-model"} <= set(differ) and made["--optimizer-model"] == made["--model"] \
                and wanted["--optimizer-model"] == wanted["--model"]:
            differ.remove("--optimizer-model")  # it followed --model (no --optimizer-model given either time)
        if differ:
            shown = ", ".join(f"{flag} {_shown(made[flag])} (now {_shown(wanted[flag])})" for flag in differ)
            raise UsageError(f"{self.folder} was made with {shown}; re-run with the same options to go on, "
                             "or give a new --out")
        self._write_options({**made, **{flag: v for flag, v in wanted.items() if flag not in ENDPOINT}})

    def confirm(self, wanted: dict[str, Any], flags: list[str]) -> None:
        """Record ENDPOINT options (`flags`) whose model has answered: from now on they bind the folder."""
        self._write_options({**self._options(), **{flag: wanted[flag] for flag in flags}})

    def options(self) -> dict[str, Any]:
        """The deciding options the folder was made with, by flag (options.json; empty when there is none)."""
        return self._options()

    def _options(self) -> dict[str, Any]:
        path = self.folder / OPTIONS
        if not path.is_file():
            return {}
        try:
            made = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise DataError(f"{path}: not JSON ({exc})") from None
        if not isinstance(made, dict):
            raise DataError(f"{path}: not a JSON object of options")
        return made

    def _write_options(self, options: dict[str, Any]) -> None:
        if (self.folder / OPTIONS).is_file() and options == self._options():
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        _write_atomic(self.folder / OPTIONS, json.dumps(options, indent=2) + "\n")

    # Where the run stands

    def current(self) -> SavedState | None:
        path = self.folder / STATE
        if not path.is_file():
            return None
        try:
            return SavedState.model_validate_json(path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise DataError(f"{path}: not an optimisation state ({str(exc).splitlines()[0]})") from None

    def save(self, *, start_hash: str, current_hash: str, structure: Structure, step: int, splits: dict[str, Any],
             val_score: float | None) -> SavedState:
        """Record the state after a step; the current state becomes the best when it scores higher."""
        before = self.current()
        state = SavedState(start_hash=start_hash, current_hash=current_hash, structure=structure, step=step,
                           splits=splits, val_score=val_score, best_hash=current_hash, best_structure=structure,
                           best_score=val_score, best_dir=f"prompts/{current_hash}")
        if before is not None and not _better(val_score, before.best_score):
            state = state.model_copy(update={"best_hash": before.best_hash, "best_structure": before.best_structure,
                                             "best_score": before.best_score, "best_dir": before.best_dir})
        self._write_state(state)
        return state

    def mark_best(self, params_hash: str, structure: Structure, score: float) -> SavedState:
        """Name another saved prompt set as the best (when it scores higher than the best so far)."""
        state = self.current()
        if state is None:
            raise DataError(f"{self.folder / STATE} not found: save a state before marking the best")
        if not (self.prompts_dir(params_hash) / "params.json").is_file():
            raise DataError(f"prompt set {params_hash} was never saved in {self.folder}")
        if _better(score, state.best_score):
            state = state.model_copy(update={"best_hash": params_hash, "best_structure": structure,
                                             "best_score": score, "best_dir": f"prompts/{params_hash}"})
            self._write_state(state)
        return state

    def _write_state(self, state: SavedState) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        _write_atomic(self.folder / STATE, json.dumps(state.model_dump(mode="json"), indent=2, sort_keys=True) + "\n")
        self._link_best(state.best_dir)

    def _link_best(self, target: str) -> None:
        link = self.folder / "best"
        if link.is_symlink() and os.readlink(link) == target:
            return
        # A relative link, replaced atomically, so the folder can be moved and a kill leaves a whole link.
        tmp = self.folder / f".best.{os.getpid()}.tmp"
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(target, target_is_directory=True)
        os.replace(tmp, link)


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    return "none" if value is None else str(value)


def _better(score: float | None, than: float | None) -> bool:
    return score is not None and (than is None or score > than)
