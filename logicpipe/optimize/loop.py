"""The optimisation loop: per step a forward pass on a training minibatch, the judge's losses, gradients
backward through the pipeline, candidates for the components the gradients blame most (blame.py; a
demonstration is harvested from a correct run, demos.py; the others rewritten, optimizers.py), raced on
validation by successive halving (race.py), and the survivor kept only if it beats the current state on
held-out validation problems by more than noise, or matches it for measurably fewer tokens (--objective;
a paired comparison on the same problems). Everything is written as it happens, so a killed run resumes from the last accepted state and
its earlier model calls come from the cache."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..core.errors import LogicPipeError, RunStopped, UsageError
from ..llm import api_key
from ..prompts import PromptSet
from ..runtime.folder import LOCK_FILE, DirectoryLock
from ..solvers import get_solver
from ..stages.llmcalls import BudgetSpent
from .blame import rank
from .calls import Budget, template_hashes
from .config import OptimizeConfig
from .demos import harvestable, propose_demonstration
from .final import TestScore, read_test, score_test
from .forward import Trace, batch_tag, forward
from .gradient import gradients
from .loss import losses
from .optimizers import Proposal, Tried, propose_prompt, propose_structure
from .params import PromptParams, Structure, prompt_ids
from .race import Entrant, label, race
from .records import CandidateRecord, StepRecord
from .splits import Splits, make_splits, minibatch
from .state import OptimizeState

Notes = Callable[[str], None]
# With --structure, every STRUCTURE_EVERY-th step proposes a structure change instead of a rewrite.
STRUCTURE_EVERY = 3


def _silent(note: str) -> None:
    return None


@dataclass
class OptimizeResult:
    folder: Path
    splits: dict
    start_hash: str
    current_hash: str
    best_hash: str
    start_score: float
    best_score: float
    steps: list[StepRecord] = field(default_factory=list)
    candidates: list[CandidateRecord] = field(default_factory=list)
    stopped: str | None = None  # why the run ended before --steps (a spent budget)
    test: TestScore | None = None  # start and best on the test part

    @property
    def best_dir(self) -> Path:
        return self.folder / "prompts" / self.best_hash


@dataclass
class _Current:
    params: PromptParams
    structure: Structure
    folder: Path  # prompts/<hash>/, a --prompts folder
    scores: dict[str, float]  # validation problem id -> score
    tokens: dict[str, int]  # validation problem id -> model tokens it took

    @property
    def score(self) -> float:
        return sum(self.scores.values()) / len(self.scores)


class _Run:
    def __init__(self, config: OptimizeConfig, notes: Notes):
        """Everything that can fail before a file is written fails here: it only reads."""
        self.config, self.notes = config, notes
        spec = config.spec
        self.formulate_prompt, self.solver = spec.prompt, spec.solver
        api_key(config.base_url)
        get_solver(self.solver).check()
        self.splits: Splits = make_splits(config)
        self.start_params = PromptParams.from_prompt_set(PromptSet(config.prompts),
                                                         prompt_ids(self.formulate_prompt, self.solver))
        self.state = OptimizeState(config.out)
        self.budget = Budget(config, cache_path=config.cache_path, max_calls=config.max_calls)
        self.budget.on_answer = self.answered

    def answered(self, model: str) -> None:
        """A model's first reply: the options that named it now bind the folder."""
        config = self.config
        flags = ["--base-url", *(["--model"] if model == config.model else []),
                 *(["--optimizer-model"] if model == config.judge else [])]
        self.state.confirm(config.identity(), flags)

    def score(self, traces: list[Trace]) -> dict[str, float]:
        # Supervised: the answer is right. Unsupervised (no gold answers used): a program executed.
        key = "correct" if self.config.supervised else "executed"
        return {t.outcome.id: float(getattr(t.outcome, key)) for t in traces}

    def validate(self, params: PromptParams, structure: Structure, folder: Path,
                 ids: list[str] | None = None) -> tuple[dict[str, float], dict[str, int]]:
        """Scores and tokens per problem on `ids` (default: all validation problems)."""
        ids = self.splits.val if ids is None else ids
        if not ids:
            return {}, {}
        traces = forward(self.config, folder, params.hash, structure, self.splits.val_split, ids,
                         batch_tag("val", ids), self.budget)
        return self.score(traces), {t.outcome.id: t.tokens for t in traces}

    def step(self, number: int, current: _Current) -> tuple[_Current, StepRecord]:
        started = time.monotonic()
        config, state = self.config, self.state
        batch = minibatch(self.splits, number, config.batch_size, config.seed)
        traces = forward(config, current.folder, current.params.hash, current.structure, self.splits.train_split,
                         batch, batch_tag("train", batch), self.budget)
        judged = losses(config, self.budget, traces, number)
        state.append_losses(judged)
        grads = gradients(config, self.budget, traces, judged, current.params, self.formulate_prompt, self.solver,
                          number)
        state.append_gradients(grads)
        proposals, choice = self.propose(number, current, traces, judged, grads)
        candidates, chosen, rungs = self.judge(number, current, proposals)
        state.append_candidates(candidates)
        after = chosen or current
        accepted = next((c.params_hash for c in candidates if c.status == "accepted"), None)
        spend = self.budget.new_step()
        record = StepRecord(step=number, accepted=accepted, val_score=after.score,
                            calls=spend.calls, cached_calls=spend.cached_calls, prompt_tokens=spend.prompt_tokens,
                            completion_tokens=spend.completion_tokens,
                            cost=config.cost(spend.prompt_tokens, spend.completion_tokens),
                            seconds=round(time.monotonic() - started, 3), race=rungs,
                            blame=choice[0] if choice else {}, choice=choice[1] if choice else None,
                            optimizer_prompts=template_hashes(config))
        return after, record

    def propose(self, number: int, current: _Current, traces: list[Trace], judged: list,
                grads: list) -> tuple[list[Proposal], tuple[dict[str, float], str] | None]:
        """The step's candidates, and (for prompts) the blame that chose their components and why."""
        if self.config.structure and number % STRUCTURE_EVERY == 0:
            # The same change from the same state would be the same candidate: validation has judged it.
            tried = [c.change for c in self.state.read_candidates()
                     if c.step < number and c.kind == "structure" and c.status == "rolled_back"
                     and c.params_hash == current.params.hash and len(c.change) == 1
                     and c.structure == _changed(current.structure, c.change)]
            return [propose_structure(self.config, self.budget, current.structure, traces, grads, number, tried)], None
        supervised = self.config.supervised
        choice = rank(current.params, self.formulate_prompt, self.solver, grads, judged,
                      bool(harvestable(traces, judged, supervised)))
        proposals = []
        for prompt_id, component in choice.ranked[:self.config.candidates]:
            if component == "demonstrations":
                proposals.append(propose_demonstration(current.params, prompt_id, traces, judged, supervised,
                                                       self.solver))
            else:
                proposals.append(propose_prompt(self.config, self.budget, current.params, prompt_id, component,
                                                self.solver, grads, judged, number,
                                                self.tried(number, prompt_id, component, current.params)))
        if not proposals:
            proposals = [Proposal("prompt", reason=choice.why)]
        return proposals, (choice.blame, choice.why)

    def tried(self, number: int, prompt_id: str, component: str, params: PromptParams) -> list[Tried]:
        """Rewrites of this component that validation rolled back in earlier steps, with their scores
        (so the optimiser does not offer them again and sees how they did). A step redone after a kill
        sees what it saw the first time, so its requests are the same and come from the cache."""
        found: list[Tried] = []
        for candidate in self.state.read_candidates():
            if candidate.status not in ("rolled_back", "dropped") or \
                    (candidate.prompt_id, candidate.component) != (prompt_id, component):
                continue
            if candidate.step >= number:
                continue
            if candidate.params_hash is None:
                continue
            earlier = self.state.load_params(candidate.params_hash)
            text = earlier.component(prompt_id, component)
            if text != params.component(prompt_id, component) and text not in [t.text for t in found]:
                found.append(Tried(text, candidate.val_score, candidate.base_score))
        return found

    def judge(self, number: int, current: _Current,
              proposals: list[Proposal]) -> tuple[list[CandidateRecord], _Current | None, list]:
        """The candidates raced on validation (race.py); the survivor against the current state on every
        validation problem, kept by --objective's rule. The records, the new state (None: none kept), the
        rungs of the race."""
        records: list[CandidateRecord] = []
        entrants = []
        for proposal in proposals:
            base = CandidateRecord(step=number, kind="structure" if proposal.kind == "structure" else "prompt",
                                   prompt_id=proposal.prompt_id, component=proposal.component,
                                   change=proposal.change, attempts=proposal.attempts, status="rejected",
                                   base_score=current.score, source=proposal.source)
            if proposal.params is None and proposal.structure is None:
                self.notes(f"step {number}: candidate rejected ({proposal.reason})")
                records.append(base.model_copy(update={"reason": proposal.reason}))
                continue
            params = proposal.params or current.params
            structure = proposal.structure or current.structure
            folder = self.state.save_prompts(params, structure)
            entrants.append(Entrant(base, params, structure, folder))
        if not entrants:
            return records, None, []

        def scored(entrant: Entrant, ids: list[str]) -> tuple[dict[str, float], dict[str, int]]:
            return self.validate(entrant.params, entrant.structure, entrant.folder, ids)

        outcome = race(entrants, self.splits.val, current.scores, current.tokens, scored, self.config)
        records += outcome.records
        for record in outcome.records:
            if record.status == "dropped":
                self.notes(f"step {number}: {label(record)} raced out after {record.problems} validation problems")
        final = outcome.records[-1]
        if final.paired is not None:
            self.notes(f"step {number}: validation {current.score:.3f} -> {final.val_score:.3f} "
                       f"(paired {final.paired.mean:+.3f} ± {final.paired.se:.3f}): "
                       f"{'accepted' if final.status == 'accepted' else 'rolled back'} ({final.reason})")
        if final.status != "accepted" or outcome.survivor is None:
            return records, None, outcome.rungs
        survivor = outcome.survivor
        return records, _Current(survivor.params, survivor.structure, survivor.folder, outcome.scores,
                                 outcome.tokens), outcome.rungs

    def start(self) -> tuple[_Current, int, str]:
        """The state to continue from: the last accepted one (a resumed run), else the start prompts."""
        start = self.start_params
        saved = self.state.current()
        if saved is None:
            params, structure, done = start, Structure(), 0
        else:
            if saved.start_hash != start.hash:
                raise UsageError(f"{self.config.out} was optimised from another start prompt set "
                                 f"({saved.start_hash}, now {start.hash}); use another --out")
            params, structure, done = self.state.load_params(saved.current_hash), saved.structure, saved.step
        folder = self.state.save_prompts(params, structure)
        if saved is None:
            self.state.save_prompts(start, Structure())
        current = _Current(params, structure, folder, *self.validate(params, structure, folder))
        return current, done, start.hash


def _changed(structure: Structure, change: dict) -> dict | None:
    (name, value), = change.items()
    if Structure.off_menu(name, value) is not None or structure.conflict(name, value) is not None:
        return None
    return structure.with_change(name, value).model_dump()


def optimize(config: OptimizeConfig, progress: Notes = _silent) -> OptimizeResult:
    """Optimise the prompts (and with config.structure, the structure) of a dataset's pipeline; see the
    module docstring. Resumes what an earlier run in config.out left; one run at a time holds the folder.
    A run that stops before the model answered anything (a bad key, an endpoint that is down) removes
    what it wrote in OUT, and OUT itself if it made it, unless a request failed in a way the server may
    have billed (a timeout, a server error): then OUT keeps spent.json's count."""
    run = _Run(config, progress)
    made = _first_missing(config.out)
    lock_there = (config.out / LOCK_FILE).exists()
    with DirectoryLock(config.out):
        # Taken under the lock: whatever is in OUT now is another run's, and stays.
        before = _contents(config.out) - (set() if lock_there else {Path(LOCK_FILE)})
        try:
            run.state.check_options(config.identity())
            run.splits.write(config.out)  # the cut, recorded (and what `run --ids` reads)
            stopped = _finish(run, progress)
        except LogicPipeError:
            if run.state.current() is None and run.budget.replies == 0 and run.budget.maybe_paid == 0:
                _unmake(config.out, before, made)
            raise
    return result(config, stopped)


def _finish(run: _Run, progress: Notes) -> str | None:
    """The steps, then the test part scored whatever ended them: the last step, a spent budget, Ctrl-C
    (a second Ctrl-C skips the scoring) or a model that failed (then no score, and the record says why)."""
    args = (run.config, run.splits, run.state, run.budget)
    try:
        stopped = _steps(run, progress)
    except KeyboardInterrupt:
        progress(f"interrupted: scoring the start and best prompt sets on the {len(run.splits.test)} test problems "
                 "(Ctrl-C again skips this)")
        score_test(*args, "interrupted (Ctrl-C)")
        raise
    except RunStopped as exc:
        score_test(*args, str(exc), skip="the model failed, so the test part was not scored")
        raise
    progress(f"scoring the start and best prompt sets on the {len(run.splits.test)} test problems")
    test = score_test(*args, stopped)
    if test is not None and test.paired is not None and test.interval is not None:
        progress(f"test: start {test.start:.3f}, best {test.best:.3f} (paired {test.paired.mean:+.3f}, "
                 f"95% interval {test.interval[0]:+.3f} to {test.interval[1]:+.3f}, {test.problems} problems)")
    return stopped


def _first_missing(folder: Path) -> Path | None:
    """The highest folder of `folder`'s path that does not exist yet (None: it exists)."""
    missing = None
    for path in (folder, *folder.parents):
        if path.exists() or path.is_symlink():
            return missing
        missing = path
    return missing


def _contents(folder: Path) -> set[Path]:
    return {path.relative_to(folder) for path in folder.rglob("*")}


def _unmake(out: Path, before: set[Path], made: Path | None) -> None:
    """Remove what this run wrote in OUT (nothing that was there before it), then the folders it made
    that are empty. A --llm-cache outside OUT is left: other runs may share it."""
    for path in sorted(_contents(out) - before):
        if path.parent in before or path.parent == Path("."):  # the topmost new entries
            target = out / path
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target, ignore_errors=True)
            else:
                target.unlink(missing_ok=True)
    if made is None:
        return
    for folder in (out, *out.parents):
        try:
            folder.rmdir()
        except OSError:
            return
        if folder == made:
            return


def _steps(run: _Run, progress: Notes) -> str | None:
    """The start, then the steps; why the run stopped early (a spent budget), or None."""
    config, state, budget = run.config, run.state, run.budget
    stopped = None
    started = time.monotonic()
    try:
        current, done, start_hash = run.start()
        if done == 0 and not state.read_steps():
            spend = budget.new_step()
            state.append_steps([StepRecord(step=0, val_score=current.score, calls=spend.calls,
                                           cached_calls=spend.cached_calls, prompt_tokens=spend.prompt_tokens,
                                           completion_tokens=spend.completion_tokens,
                                           cost=config.cost(spend.prompt_tokens, spend.completion_tokens),
                                           seconds=round(time.monotonic() - started, 3))])
            state.save(start_hash=start_hash, current_hash=current.params.hash, structure=current.structure,
                       step=0, splits=run.splits.as_dict(), val_score=current.score)
        progress(f"{run.splits.note}; validation score {current.score:.3f}")
        for number in range(done + 1, config.steps + 1):
            reason = budget.spent()
            if reason:
                stopped = reason
                break
            current, record = run.step(number, current)
            state.append_steps([record])
            state.save(start_hash=start_hash, current_hash=current.params.hash, structure=current.structure,
                       step=number, splits=run.splits.as_dict(), val_score=current.score)
    except BudgetSpent as exc:
        why = budget.spent() or str(exc)
        if state.current() is None:
            raise RunStopped(f"{why} before the start prompts were validated on {len(run.splits.val)} problems; "
                             "re-run with a larger budget to go on (what was answered is cached)") from None
        stopped = why
    return stopped


def result(config: OptimizeConfig, stopped: str | None = None) -> OptimizeResult:
    state = OptimizeState(config.out)
    saved = state.current()
    steps = state.read_steps()
    if saved is None:
        raise UsageError(f"{config.out} holds no optimisation state")
    return OptimizeResult(folder=config.out, splits=saved.splits, start_hash=saved.start_hash,
                          current_hash=saved.current_hash, best_hash=saved.best_hash,
                          start_score=steps[0].val_score or 0.0 if steps else 0.0,
                          best_score=saved.best_score or 0.0, steps=steps, candidates=state.read_candidates(),
                          stopped=stopped, test=read_test(config.out))
