"""A method spec (data/methods.py) turned into a run: its options set on the run's, checked against what
the user gave, and the one machinery (run_stages, or baseline for a method without a solver) run with
them. The stages never learn which method they serve; they read only the options."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from ..core.errors import UsageError
from ..data.methods import MethodSpec, load_method
from .config import STAGES, RunConfig, invalid_options
from .context import Gate, Progress, quiet
from .runner import RunReport, baseline, baseline_dir, run_stages


def configure(config: RunConfig, spec: MethodSpec, command: str | None = None) -> RunConfig:
    """The run options with the method's settings. An option the user gave with another value than the
    method's is refused, as is a dataset the method has no prompt for, before anything runs. `command`
    (run or baseline) is the command the user typed, refused when it is the other kind of method."""
    if command == "run" and spec.baseline is not None:
        raise UsageError(f"method '{spec.name}' answers without a solver: use `logicpipe baseline --method {spec.name}`")
    if command == "baseline" and spec.baseline is None:
        raise UsageError(f"method '{spec.name}' runs a solver: use `logicpipe run --method {spec.name}`")
    key = config.spec.key
    writes = config.programs is None and config.model is not None  # a replay: written already, by any prompt
    if spec.datasets and key not in spec.datasets and writes:
        raise UsageError(f"method '{spec.name}' has prompts for {', '.join(spec.datasets)}, not for {key}")
    if spec.syntax == "linc" and writes and not spec.prompts.get(key):
        raise UsageError(f"method '{spec.name}' has no prompt for {key} in its program syntax: replay its programs "
                         "with --programs (or `logicpipe reproduce --paper linc`)")
    options = spec.run_options()
    for field, value in options.items():
        given = getattr(config, field)
        if given != RunConfig.model_fields[field].default and given != value:
            flag = "--" + field.replace("_", "-")
            raise UsageError(f"--method {spec.name} sets {flag} {value}; drop {flag} {given}")
    if config.method is not None and config.method != _named(spec):
        raise UsageError(f"the run is already method '{config.method}'; it cannot also be '{spec.name}'")
    try:
        return RunConfig(**{**config.model_dump(exclude_unset=True), **options, "method": _named(spec)})
    except ValidationError as exc:
        raise invalid_options(exc) from None


def _named(spec: MethodSpec) -> str:
    """How a run names its method: a shipped name, or its spec file's absolute path."""
    return str(spec.path) if spec.path is not None else spec.name


def run_method(config: RunConfig, spec: MethodSpec, progress: Progress = quiet, gate: Gate | None = None) -> RunReport:
    """One dataset through the method: its pipeline run, or its baseline when it answers without a
    solver. `gate` (a spending cap over several runs, as compare's) is charged every request."""
    config = configure(config, spec)
    if spec.baseline is not None:
        return baseline(config, spec.baseline, progress, gate)
    return run_stages(config, list(STAGES), progress, gate)


def folder_of(config: RunConfig) -> Path:
    """Where a configured method's run lies: its dataset folder, under OUT/baseline-<method>/ for a
    method without a solver (where `baseline` writes)."""
    mode = load_method(config.method).baseline if config.method is not None else None
    return config.stage_dir if mode is None else baseline_dir(config, mode)
