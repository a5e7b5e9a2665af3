"""Runs as data frames: one row per scored problem of a run, or of every run under a folder (compare's
OUT/<formalism>/<dataset>, reproduce's OUT/replay/<model>/<dataset>), as inspect_ai's `samples_df`
gives one per sample. `problem_rows` builds the rows as plain dicts; `problems_df` puts them in a
pandas DataFrame (pandas is the optional `frames` extra: `pip install 'logicpipe[frames]'`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import PrerequisiteError
from ..core.records import Usage
from ..core.trajectory import Trajectory
from ..stages.store import Recorded, find_runs, read_recorded
from .diff import side

if TYPE_CHECKING:
    import pandas

COLUMNS = ("run", "dataset", "id", "method", "formalism", "model", "prompt_hash", "program", "verdict", "answer",
           "gold", "correct", "executed", "error", "prompt_tokens", "completion_tokens", "tokens", "cost", "seconds",
           "epoch")
_BASELINES = ("standard", "cot")


def problem_rows(path: Path | str, price_prompt: float | None = None,
                 price_completion: float | None = None) -> list[dict[str, Any]]:
    """One dict per scored problem of each run folder under `path` (itself, or up to three levels down),
    with COLUMNS as keys. `run` is the folder relative to `path`. `cost` is the problem's tokens at the
    prices given (per million tokens, as --price-prompt and --price-completion; None without them: a run
    folder does not record its prices). `epoch` is 1, or k for --epochs' OUT/epoch-k/."""
    root = Path(path)
    rows = []
    for label, folder in find_runs(root):
        recorded = read_recorded(folder, [])
        about = _run_fields(recorded)
        for trajectory in recorded.trajectories:
            if trajectory.evaluated is not None:
                rows.append({"run": label, **about, **_problem(trajectory, price_prompt, price_completion)})
    return rows


def problems_df(path: Path | str, price_prompt: float | None = None,
                price_completion: float | None = None) -> pandas.DataFrame:
    """problem_rows(...) as a pandas DataFrame, its columns in COLUMNS' order."""
    try:
        import pandas
    except ImportError:
        raise PrerequisiteError("runs as data frames need pandas: pip install 'logicpipe[frames]'") from None
    return pandas.DataFrame(problem_rows(path, price_prompt, price_completion), columns=list(COLUMNS))


def _run_fields(recorded: Recorded) -> dict[str, Any]:
    """What the run's identity (run.json) says of all its problems."""
    stages = recorded.identity.get("stages", {})
    baseline = next((mode for mode in _BASELINES if mode in stages), None)
    formulate = stages.get("formulate", {})
    if baseline is not None:
        method, model = baseline, stages[baseline].get("model")
    else:
        samples = formulate.get("num_samples") or 1
        method = str(recorded.identity.get("method") or ("logic-lm" if samples == 1 else f"logic-lm, vote of {samples}"))
        model = formulate.get("model") or (f"replay:{formulate['programs']}" if "programs" in formulate else None)
    # --epochs: epoch k > 1 records its sampling seed k with the stage that samples (stages/epochs.py)
    seed = (stages.get(baseline) if baseline is not None else formulate).get("seed")
    return {"dataset": recorded.key, "method": method, "formalism": stages.get("solve", {}).get("solver"),
            "model": model, "epoch": seed or 1}


def _problem(trajectory: Trajectory, price_prompt: float | None, price_completion: float | None) -> dict[str, Any]:
    scored = trajectory.evaluated
    assert scored is not None
    shown = side(trajectory)
    records = [trajectory.formulated, *trajectory.refined.values(), *trajectory.decided.values(),
               trajectory.interpreted]
    usage = Usage()
    for record in records:
        if record is not None and record.usage is not None:
            usage = usage + record.usage
    cost = None
    if price_prompt is not None or price_completion is not None:
        cost = (usage.prompt_tokens * (price_prompt or 0) + usage.completion_tokens * (price_completion or 0)) / 1e6
    formulated = trajectory.latest_program()
    return {"id": trajectory.id, "prompt_hash": formulated.prompt_hash if formulated is not None else None,
            "program": shown.program, "verdict": shown.verdict, "answer": scored.final, "gold": scored.gold,
            "correct": scored.correct, "executed": scored.executed,
            "error": scored.error.category.value if scored.error is not None else None,
            "prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens,
            "tokens": usage.prompt_tokens + usage.completion_tokens, "cost": cost,
            "seconds": round(sum(s.seconds for s in trajectory.solved.values()), 4)}
