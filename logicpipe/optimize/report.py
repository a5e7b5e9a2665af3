"""What an optimisation run found, from its folder alone: the validation curve (curve.png), a table per
step with the paired comparison behind each decision and what it cost (report.md), and the best prompt
set's changes against the start (best.diff)."""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.errors import DataError
from .calls import read_ledger
from .final import read_test
from .records import CandidateRecord, StepRecord, TestScore, label
from .state import OptimizeState, SavedState
from .stats import describe

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def write_report(folder: Path) -> list[Path]:
    state = OptimizeState(folder)
    saved = state.current()
    if saved is None:
        raise DataError(f"{folder} holds no optimisation state (state.json)")
    steps, candidates = state.read_steps(), state.read_candidates()
    diff = best_diff(state, saved)
    test = read_test(folder)
    paths = [folder / "report.md", folder / "report.json", folder / "best.diff", folder / "curve.png"]
    options = state.options()
    paths[0].write_text(markdown(folder, saved, steps, candidates, bool(diff), read_ledger(folder), test, options),
                        encoding="utf-8")
    paths[1].write_text(json.dumps(summary(saved, steps, test, options), indent=2) + "\n", encoding="utf-8")
    paths[2].write_text(diff, encoding="utf-8")
    curve(steps, candidates, paths[3])
    return paths


def summary(saved: SavedState, steps: list[StepRecord], test: TestScore | None,
            options: dict | None = None) -> dict:
    """report.json: the validation scores (chosen on, so optimistic) beside the test scores (unseen)."""
    options = options or {}
    used = [s.optimizer_prompts for s in steps if s.optimizer_prompts]
    return {"objective": options.get("--objective", "accuracy"), "candidates": options.get("--candidates", 1),
            "optimizer_prompts": used[-1] if used else None,
            "splits": saved.splits, "start_hash": saved.start_hash, "best_hash": saved.best_hash,
            "best_dir": saved.best_dir, "best_structure": saved.best_structure.model_dump(), "steps_done": saved.step,
            "val_start": steps[0].val_score if steps else None, "val_best": saved.best_score,
            "test_split": test.split if test else None, "test_problems": test.problems if test else None,
            "test_ids_file": test.ids_file if test else None,
            "test_start": test.start if test else None, "test_best": test.best if test else None,
            "test_paired": test.paired.model_dump() if test and test.paired else None,
            "test_interval": list(test.interval) if test and test.interval else None,
            "test_error": test.error if test else "the test part was never scored (a folder from before it existed)",
            "stopped": test.stopped if test else None, "command": test.command if test else None,
            "test_calls": test.calls if test else 0, "test_sent": test.sent if test else 0}


def best_diff(state: OptimizeState, saved: SavedState) -> str:
    """A unified diff per prompt id, start -> best (empty when the best is the start)."""
    start, best = state.load_params(saved.start_hash).render(), state.load_params(saved.best_hash).render()
    chunks: list[str] = []
    for prompt_id in sorted(set(start) | set(best)):
        before, after = start.get(prompt_id, ""), best.get(prompt_id, "")
        chunks.extend(difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                           f"start/{prompt_id}.txt", f"best/{prompt_id}.txt"))
    return "".join(line if line.endswith("\n") else line + "\n" for line in chunks)


def _what(candidate: CandidateRecord | None) -> str:
    return "–" if candidate is None else label(candidate)


def _score(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _test_lines(test: TestScore | None) -> list[str]:
    if test is None:
        return ["The test part was never scored (a folder from before it existed): re-run the same command."]
    lines = [f"Scored on {test.problems} test problems of {test.split} that neither training nor acceptance saw "
             f"(their ids: {test.ids_file})" + (f"; the optimisation stopped early: {test.stopped}." if test.stopped
                                                 else ".")]
    if test.error is not None or test.paired is None or test.interval is None:
        return [*lines, "", f"No test score: {test.error}."]
    low, high = test.interval
    return [*lines, "", "| prompt set | test accuracy |", "|---|---|",
            f"| start ({test.start_hash}) | {_score(test.start)} |", f"| best ({test.best_hash}) | {_score(test.best)} |",
            "", f"Paired difference best - start: {describe(test.paired)}; 95% interval {low:+.3f} to {high:+.3f}. "
            f"The validation scores above chose the best prompt set, so they are optimistic; these are not.",
            f"The test evaluation made {test.calls} model calls ({test.cached_calls} cached), outside --max-calls."]


def _tokens(candidate: CandidateRecord | None) -> str:
    if candidate is None or candidate.tokens is None or candidate.base_tokens is None:
        return "–"
    return f"{candidate.tokens:.0f} vs {candidate.base_tokens:.0f}"


def _races(steps: list[StepRecord], candidates: list[CandidateRecord]) -> list[str]:
    """Per step: why its components were chosen, and the successive-halving rungs."""
    lines: list[str] = []
    for step in steps:
        if step.choice is None and not step.race:
            continue
        tried = [c for c in candidates if c.step == step.step]
        lines.append(f"- Step {step.step}: {step.choice or ''}" + (f"; {len(tried)} candidate(s)" if tried else ""))
        for rung in step.race:
            shown = ", ".join(f"{label} {score:.3f}" for label, score in rung.scores.items())
            lines.append(f"  - rung {rung.rung} on {rung.problems} validation problems: {shown}; kept "
                         f"{', '.join(rung.kept)}")
    return ["## Candidates and races", "", *lines, ""] if lines else []


def markdown(folder: Path, saved: SavedState, steps: list[StepRecord], candidates: list[CandidateRecord],
             changed: bool, ledger: dict | None = None, test: TestScore | None = None,
             options: dict | None = None) -> str:
    # The row shows each step's deciding candidate: the race's survivor, written last for its step.
    by_step = {c.step: c for c in candidates}
    options = options or {}
    objective = options.get("--objective", "accuracy")
    rule = ("a candidate is kept when it is better on validation, or as accurate at measurably fewer tokens"
            if objective == "accuracy" else
            "a candidate is kept when it costs measurably fewer tokens and is not worse on validation")
    lines = ["# Optimisation report", "", f"Splits: {saved.splits.get('note', saved.splits)}.", "",
             f"Objective: {objective} ({rule}); {options.get('--candidates', 1)} candidate(s) per step, raced on "
             "validation by successive halving."]
    if saved.carved:
        lines.append("The dataset has no training split of its own, so the validation split was cut into training, "
                     "validation and test parts; the scores below are on the validation part, never on the problems "
                     "the prompts learnt from, and the test part is scored at the end.")
    lines += ["", "| step | val score | candidate | candidate score | paired (new - old) | decision "
              "| tokens/problem (new vs old) | calls (cached) | tokens in/out | cost | seconds |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for step in steps:
        candidate = by_step.get(step.step)
        paired = describe(candidate.paired) if candidate and candidate.paired else "–"
        decision: str = "start" if step.step == 0 else (candidate.status if candidate else "–")
        if candidate is not None and candidate.status != "rolled_back" and candidate.reason:
            decision += ": " + candidate.reason.replace("|", "\\|").replace("\n", " ")
        cost = "–" if step.cost is None else f"{step.cost:.4f}"
        lines.append(f"| {step.step} | {_score(step.val_score)} | {_what(candidate)} | "
                     f"{_score(candidate.val_score if candidate else None)} | {paired} | {decision} | {_tokens(candidate)} | "
                     f"{step.calls} ({step.cached_calls}) | {step.prompt_tokens}/{step.completion_tokens} | {cost} | "
                     f"{step.seconds:.1f} |")
    lines += ["", *_totals(steps, ledger, test)]
    accepted = sum(c.status == "accepted" for c in candidates)
    lines += ["", f"Candidates: {len(candidates)} ({accepted} accepted, "
              f"{sum(c.status == 'rolled_back' for c in candidates)} rolled back, "
              f"{sum(c.status == 'dropped' for c in candidates)} raced out on part of validation, "
              f"{sum(c.status == 'rejected' for c in candidates)} rejected before validation).", "",
              *_races(steps, candidates)]
    best = folder / saved.best_dir
    lines += ["", "## Best prompt set", "",
              f"`{saved.best_dir}` (validation score {_score(saved.best_score)}; start {saved.start_hash}, "
              f"current {saved.current_hash}, {saved.step} step{'' if saved.step == 1 else 's'} done).",
              "Its changes against the start are in best.diff." if changed else
              "No step has finished yet: the best prompt set is the start." if saved.step == 0 else
              "No candidate beat the start on validation: the best prompt set is the start.",
              "", "## Test", "", *_test_lines(test), ""]
    if test is not None and test.command:
        lines += ["Reproduce the best prompt set's test score (the same problems, options and reply cache):", "",
                  "```", test.command, "```", ""]
    else:
        lines += ["Run with it:", "", "```", f"logicpipe run --prompts {best} {saved.best_structure.flags()}", "```", ""]
    return "\n".join(lines)


def _totals(steps: list[StepRecord], ledger: dict | None, test: TestScore | None = None) -> list[str]:
    """The totals: spent.json's (every request any run sent) where there is one, with the part that the
    finished steps' rows do not show (steps interrupted by a kill or a spent budget, or not finished)."""
    calls, cached = sum(s.calls for s in steps), sum(s.cached_calls for s in steps)
    tokens = sum(s.prompt_tokens for s in steps), sum(s.completion_tokens for s in steps)
    costs = [s.cost for s in steps if s.cost is not None]
    if ledger is None:  # a folder from before spent.json: the rows are all there is
        return [f"Total: {calls} model calls ({cached} from the cache), {tokens[0]} prompt and {tokens[1]} "
                "completion tokens" + (f", cost {sum(costs):.4f}" if costs else "") + "."]
    cost = ledger["cost"]
    lines = [f"Total (spent.json): {ledger['sent']} requests sent to the model, {ledger['prompt_tokens']} prompt and "
             f"{ledger['completion_tokens']} completion tokens" + (f", cost {cost:.4f}" if cost is not None else "")
             + f". The rows above: {calls} model calls, {cached} of them from the cache (free)."]
    # The test evaluation's requests are in the ledger too, but belong to no step.
    spent_test = (test.sent, test.prompt_tokens, test.completion_tokens) if test is not None else (0, 0, 0)
    if any(spent_test):
        lines.append(f"Of the requests sent, {spent_test[0]} scored the test part.")
    extra = (ledger["sent"] - (calls - cached) - spent_test[0], ledger["prompt_tokens"] - tokens[0] - spent_test[1],
             ledger["completion_tokens"] - tokens[1] - spent_test[2])
    if any(value > 0 for value in extra):
        lines += ["", f"Of that, {extra[0]} requests ({extra[1]} prompt and {extra[2]} completion tokens) belong to "
                  "steps that were interrupted (a kill or a spent budget) or are not finished: no row shows them. "
                  "A redone step gets their replies from the cache."]
    return lines


def curve(steps: list[StepRecord], candidates: list[CandidateRecord], path: Path) -> None:
    """Validation score of the current state per step (curve_figure), as a PNG."""
    import matplotlib.pyplot as plt

    fig = curve_figure(steps, candidates)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def curve_figure(steps: list[StepRecord], candidates: list[CandidateRecord]) -> Figure:
    """Validation score of the current state per step; accepted steps filled, tried candidates as crosses.
    Whole steps on x however few there are, and scores on a fixed 0-1 axis, so a flat curve stays flat."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, axis = plt.subplots(figsize=(7, 4))
    points = [(s.step, s.val_score) for s in steps if s.val_score is not None]
    if points:
        # Markers too: a run with only step 0 is one point, which a line alone would not draw.
        axis.plot([p[0] for p in points], [p[1] for p in points], "-", marker=".", color="#2b6cb0",
                  drawstyle="steps-post", label="current state", clip_on=False)
    accepted = [(s.step, s.val_score) for s in steps if s.accepted is not None and s.val_score is not None]
    if accepted:
        axis.plot([p[0] for p in accepted], [p[1] for p in accepted], "o", color="#2f855a", label="accepted step",
                  clip_on=False)
    tried = [(c.step, c.val_score) for c in candidates if c.status == "rolled_back" and c.val_score is not None]
    if tried:
        axis.plot([p[0] for p in tried], [p[1] for p in tried], "x", color="#c53030", label="rolled-back candidate",
                  clip_on=False)
    last = max([s.step for s in steps] + [c.step for c in candidates] + [1])
    axis.set_xlim(-0.25, last + 0.25)
    axis.set_ylim(0.0, 1.0)
    axis.xaxis.set_major_locator(MaxNLocator(integer=True))
    axis.set_xlabel("step")
    axis.set_ylabel("validation score")
    axis.set_title("Validation score per optimisation step", fontsize=10)
    axis.legend(fontsize=8, frameon=False)
    fig.tight_layout()
    return fig
