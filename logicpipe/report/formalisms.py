"""`logicpipe compare`: one dataset through several formalisms with the same client, cache, refinement
and evaluator, one run per formalism in OUT/<formalism>/, and a table of each run's parse rate,
Exe_Rate, Exe_Acc and accuracy read back from its folder (stages/store.read_recorded, the one reader of
run folders), so a table of runs made earlier, or resumed, reads the same."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..core.errors import UsageError
from ..core.records import ErrorCategory
from ..data.registry import solver_name
from ..prompts import PromptSet
from ..solvers.registry import names as solver_names
from ..stages import Progress, RunConfig
from ..stages.context import quiet
from ..stages.runner import PIPELINE, run_stages
from ..stages.store import read_recorded

# A problem's latest program "parsed" unless it failed to parse, or there was none to parse.
_UNPARSED = (ErrorCategory.parse, ErrorCategory.no_program, ErrorCategory.llm)


@dataclass(frozen=True)
class Row:
    formalism: str
    problems: int
    parsed: int
    exe_rate: float | None  # None: undefined (nothing to divide by), shown as `–`
    exe_acc: float | None
    accuracy: float | None
    folder: Path

    @property
    def parse_rate(self) -> float | None:
        return round(100.0 * self.parsed / self.problems, 2) if self.problems else None

    def cells(self) -> list[str]:
        """The row as the table shows it: formalism, problems, parse rate, Exe_Rate, Exe_Acc, accuracy."""
        return [self.formalism, str(self.problems),
                *(_cell(v) for v in (self.parse_rate, self.exe_rate, self.exe_acc, self.accuracy))]


def parse_formalisms(text: str) -> list[str]:
    """--formalisms as typed (`lp,asp`): installed solver names, each once; ValueError otherwise."""
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise ValueError("name at least one formalism, e.g. --formalisms lp,asp")
    resolved = [solver_name(name) for name in names]
    if len(set(resolved)) != len(resolved):
        raise ValueError(f"a formalism is named twice in {text!r}")
    return resolved


def configs(config: RunConfig, formalisms: list[str]) -> list[RunConfig]:
    """One run's options per formalism (OUT/<formalism>), each checked to have a prompt before any run
    starts, so a misnamed one costs nothing."""
    spec = config.check_source()
    prompts = PromptSet(config.prompts)
    fits = [name for name in solver_names() if name == spec.solver or prompts.has(f"{spec.prompt}-{name}")]
    missing = [name for name in formalisms if name not in fits]
    if missing and config.programs is None:
        raise UsageError(f"--formalisms: no prompt for {spec.key} in {', '.join(missing)} ('{spec.prompt}-"
                         f"{missing[0]}' is missing); the formalisms with a prompt for it: {', '.join(fits)}")
    return [config.model_copy(update={"formalism": name, "out": config.out / name}) for name in formalisms]


def compare(config: RunConfig, formalisms: list[str], progress: Progress = quiet) -> list[Row]:
    """Run (or resume) each formalism's run, then read each folder back into a row. A spending cap
    (--max-cost, --max-tokens-total) is over the whole command: one ledger, OUT/spent.json."""
    runs = configs(config, formalisms)
    gate = None
    if config.capped:
        from ..llm.budget import Budget

        gate = Budget(config, folder=config.out)  # --overwrite starts the runs afresh, not what they spent
    for each in runs:
        run_stages(each, list(PIPELINE), progress, gate)
    return [read_row(each.formalism or "", each.stage_dir) for each in runs]


def read_row(formalism: str, stage_dir: Path) -> Row:
    recorded = read_recorded(stage_dir, [])
    parsed = 0
    for trajectory in recorded.trajectories:
        latest = trajectory.solved[max(trajectory.solved)] if trajectory.solved else None
        parsed += latest is not None and (latest.error is None or latest.error.category not in _UNPARSED)
    metrics = recorded.metrics
    return Row(formalism, int(metrics.get("total", len(recorded.trajectories))), parsed,
               _rate(metrics.get("exe_rate")), _rate(metrics.get("exe_acc")), _rate(metrics.get("accuracy")),
               stage_dir)


def _rate(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) else None


def _cell(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}"


def markdown(rows: list[Row], dataset: str) -> str:
    """The table as Markdown (docs/formalisms.md shows one)."""
    lines = [f"| {dataset} | problems | parse rate | Exe_Rate | Exe_Acc | accuracy |",
             "|---|---|---|---|---|---|"]
    lines += ["| " + " | ".join(row.cells()) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def write_table(out: Path, dataset: str, rows: list[Row]) -> Path:
    """OUT/compare-<dataset>.md, the table as Markdown."""
    path = out / f"compare-{dataset}.md"
    path.write_text(markdown(rows, dataset), encoding="utf-8")
    return path
