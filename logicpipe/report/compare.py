"""`logicpipe compare`: one dataset through several methods (`--methods logic-lm,linc,cot`) or several
formalisms of one method (`--formalisms lp,asp`, Logic-LM's pipeline in each) with the same client,
cache and evaluator: one run per column (an arm) in OUT/<name>/ (a method without a solver in
OUT/baseline-<method>/, where `baseline` writes), and a table of each run's parse rate,
Exe_Rate, Exe_Acc and accuracy read back from its folder (stages/store.read_recorded, the one reader of
run folders), so a table of runs made earlier, or resumed, reads the same. Each rate has its 95% interval,
and each pair of columns is compared on the problems both scored (`logicpipe diff`'s paired figures),
with Holm's correction over the pairs when there are more than two columns."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from ..core import stats
from ..core.errors import UsageError
from ..core.records import ErrorCategory
from ..data.methods import MethodSpec, load_method
from ..data.registry import solver_name
from ..prompts import PromptSet
from ..solvers.registry import names as solver_names
from ..stages import Progress, RunConfig
from ..stages.context import Gate, quiet
from ..stages.methods import configure, folder_of, run_method
from ..stages.runner import PIPELINE, run_stages
from ..stages.store import read_recorded

# A problem's latest program "parsed" unless it failed to parse, or there was none to parse.
_UNPARSED = (ErrorCategory.parse, ErrorCategory.no_program, ErrorCategory.llm)


@dataclass(frozen=True)
class Row:
    name: str  # the column: a formalism or a method
    problems: int
    parsed: int | None  # None: the run wrote no program (a method without a solver)
    exe_rate: float | None  # None: undefined (nothing to divide by), shown as `–`
    exe_acc: float | None
    accuracy: float | None
    folder: Path
    executed: int = 0
    exe_rate_ci: list[float] | None = None  # 95% intervals, percent (metrics.json's)
    exe_acc_ci: list[float] | None = None
    accuracy_ci: list[float] | None = None
    epochs: dict | None = None  # --epochs: stages/epochs.py's summary of this formalism's epochs

    @property
    def parse_rate(self) -> float | None:
        return round(100.0 * self.parsed / self.problems, 2) if self.problems and self.parsed is not None else None

    def cells(self) -> list[str]:
        """The row as the table shows it: formalism, problems, parse rate, and Exe_Rate, Exe_Acc and
        accuracy, each with its 95% interval (Exe_Acc with its n)."""
        return [self.name, str(self.problems), _cell(self.parse_rate), cell(self.exe_rate, self.exe_rate_ci),
                cell(self.exe_acc, self.exe_acc_ci, self.executed), cell(self.accuracy, self.accuracy_ci)]


def parse_formalisms(text: str) -> list[str]:
    """--formalisms as typed (`lp,asp`): installed solver names, each once; ValueError otherwise."""
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise ValueError("name at least one formalism, e.g. --formalisms lp,asp")
    resolved = [solver_name(name) for name in names]
    if len(set(resolved)) != len(resolved):
        raise ValueError(f"a formalism is named twice in {text!r}")
    return resolved


@dataclass(frozen=True)
class Arm:
    """One column of the comparison: its name, its run's options, and the method it runs (None: the
    pipeline's stages as the options say, as `run` does)."""

    name: str
    config: RunConfig
    method: MethodSpec | None = None

    @property
    def folder(self) -> Path:
        return folder_of(self.config)

    def run(self, config: RunConfig, progress: Progress, gate: Gate | None) -> object:
        if self.method is not None:
            return run_method(config, self.method, progress, gate)
        return run_stages(config, list(PIPELINE), progress, gate)


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


def formalism_arms(config: RunConfig, formalisms: list[str]) -> list[Arm]:
    return [Arm(each.formalism or "", each) for each in configs(config, formalisms)]


def parse_methods(text: str) -> list[MethodSpec]:
    """--methods as typed (`logic-lm,linc,cot`): shipped names or spec files, each once; a misspelt
    name is one line with a did-you-mean (UsageError), a repeated one a ValueError."""
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise ValueError("name at least one method, e.g. --methods logic-lm,cot (`logicpipe methods` lists them)")
    specs = [load_method(name) for name in names]
    if len({spec.name for spec in specs}) != len(specs):
        raise ValueError(f"a method is named twice in {text!r}")
    return specs


def method_arms(config: RunConfig, methods: list[MethodSpec]) -> list[Arm]:
    """One arm per method, each configured (its options checked against the user's, its prompts for the
    dataset, a model where it asks one) before any run starts, so a mistake in the last costs nothing."""
    arms = []
    for spec in methods:
        out = config.out if spec.baseline is not None else config.out / spec.name
        each = configure(config.model_copy(update={"out": out}), spec)
        if spec.baseline is not None and not each.model:
            raise UsageError(f"method '{spec.name}' answers with a model: give --model")
        arms.append(Arm(spec.name, each, spec))
    return arms


def compare_arms(config: RunConfig, arms: list[Arm], progress: Progress = quiet) -> list[Row]:
    """Run (or resume) each arm's run, then read each folder back into a row. A spending cap
    (--max-cost, --max-tokens-total) is over the whole command: one ledger, OUT/spent.json."""
    gate = None
    if config.capped:
        from ..llm.budget import Budget

        gate = Budget(config, folder=config.out)  # --overwrite starts the runs afresh, not what they spent
    rows = []
    for arm in arms:
        summary = None
        if arm.config.epochs > 1:  # epoch 1 in the arm's folder, epoch k in <its out>/epoch-k
            summary = _epochs(arm, progress, gate)
        else:
            arm.run(arm.config, progress, gate)
        rows.append(replace(read_row(arm.name, arm.folder), epochs=summary))
    return rows


def _epochs(arm: Arm, progress: Progress, gate: Gate | None) -> dict:
    from ..stages.epochs import run_epochs

    def run_one(one: RunConfig) -> object:
        return arm.run(one, progress, gate)

    def where(one: RunConfig) -> Path:
        return replace(arm, config=one).folder

    return run_epochs(arm.config, run_one, where)[1]


def read_row(name: str, stage_dir: Path) -> Row:
    recorded = read_recorded(stage_dir, [])
    count = 0
    for trajectory in recorded.trajectories:
        latest = trajectory.solved[max(trajectory.solved)] if trajectory.solved else None
        count += latest is not None and (latest.error is None or latest.error.category not in _UNPARSED)
    # A method that answers without a program has no parse rate (–), not 0%.
    parsed = count if any(t.formulated is not None for t in recorded.trajectories) else None
    metrics = recorded.metrics
    return Row(name, int(metrics.get("total", len(recorded.trajectories))), parsed,
               _rate(metrics.get("exe_rate")), _rate(metrics.get("exe_acc")), _rate(metrics.get("accuracy")),
               stage_dir, int(metrics.get("executed", 0)),
               metrics.get("exe_rate_ci"), metrics.get("exe_acc_ci"), metrics.get("accuracy_ci"))


def _rate(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) else None


def _cell(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}"


@dataclass(frozen=True)
class Pair:
    """Two columns compared on the problems both scored (report/diff.py)."""

    a: str
    b: str
    both_right: int
    only_a: int
    only_b: int
    both_wrong: int
    difference: float | None  # accuracy a - b, in points
    interval: list[float] | None  # its paired bootstrap 95% interval, in points
    p_value: float  # McNemar's exact test
    adjusted: float  # Holm-adjusted over all the pairs (the same as p_value for one pair)
    significant: bool  # adjusted < alpha


def pairs(rows: list[Row], alpha: float = 0.05) -> list[Pair]:
    """Every pair of columns, in the table's order, with Holm's correction over them all."""
    from .diff import diff

    compared = [(a, b, diff(a.folder, b.folder)) for i, a in enumerate(rows) for b in rows[i + 1:]]
    adjusted = stats.holm([d.p_value for _, _, d in compared])
    return [Pair(a.name, b.name, d.both_right, d.only_a, d.only_b, d.both_wrong,
                 None if d.difference is None else round(100 * d.difference, 2),
                 None if d.interval is None else [round(100 * x, 2) for x in d.interval],
                 d.p_value, q, q < alpha)
            for (a, b, d), q in zip(compared, adjusted)]


def cell(value: float | None, interval: list[float] | None, n: int | None = None) -> str:
    """A rate as the table shows it: the figure, its 95% interval, and its n where given (`–`: undefined)."""
    shown = _cell(value) + (f" [{interval[0]:.1f}, {interval[1]:.1f}]" if interval and value is not None else "")
    return shown + (f" (n={n})" if n is not None else "")


def pair_cells(pair: Pair, alpha: float) -> list[str]:
    """One pair's row: A, B, the 2x2 counts, A - B with its interval, p, Holm's p, significant?"""
    difference = "–" if pair.difference is None else f"{pair.difference:+.1f}"
    interval = "–" if pair.interval is None else f"[{pair.interval[0]:+.1f}, {pair.interval[1]:+.1f}]"
    return [pair.a, pair.b, str(pair.both_right), str(pair.only_a), str(pair.only_b), str(pair.both_wrong),
            difference, interval, f"{pair.p_value:.3g}", f"{pair.adjusted:.3g}",
            f"yes (p < {alpha:g})" if pair.significant else "no"]


PAIR_COLUMNS = ("A", "B", "both right", "only A", "only B", "both wrong", "A - B (points)", "95% CI",
                "McNemar p", "Holm p", "significant")


def markdown(rows: list[Row], dataset: str, paired: list[Pair] | None = None, alpha: float = 0.05) -> str:
    """The table as Markdown (docs/formalisms.md shows one), each rate with its 95% interval, then the
    paired comparisons when given."""
    lines = [f"| {dataset} | problems | parse rate | Exe_Rate | Exe_Acc | accuracy |",
             "|---|---|---|---|---|---|"]
    lines += ["| " + " | ".join(row.cells()) + " |" for row in rows]
    if paired:
        lines += ["", "| " + " | ".join(PAIR_COLUMNS) + " |", "|" + "---|" * len(PAIR_COLUMNS)]
        lines += ["| " + " | ".join(pair_cells(pair, alpha)) + " |" for pair in paired]
    return "\n".join(lines) + "\n"


def write_table(out: Path, dataset: str, rows: list[Row], paired: list[Pair] | None = None,
                alpha: float = 0.05) -> Path:
    """OUT/compare-<dataset>.md, the table as Markdown."""
    path = out / f"compare-{dataset}.md"
    path.write_text(markdown(rows, dataset, paired, alpha), encoding="utf-8")
    return path
