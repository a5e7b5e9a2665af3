"""Semantic refinement's decision (--refine semantic): after round N's revisions are solved, each one
that executed is compared with the program it revises, and replaces it only if the model judges it more
faithful to the problem. Every revision gets one record in compare-N.jsonl saying what was decided and why.

The two programs are shown in an order drawn per problem and round (seeded, so a rerun asks the same
question and hits the cache), which spreads the model's position bias over both sides.
"""

from __future__ import annotations

import random
import re
import time
from typing import Any, Literal

from ..core.records import DecisionRecord, ErrorCategory, Outcome, StageError, executed, stage_error
from ..core.trajectory import Trajectory, program_sha
from ..llm import Request
from ..prompts import problem_fields
from .context import RunContext, StageReport
from .llmcalls import Result, send, usage

PROMPT = "compare"
Side = Literal["program", "revision"]
_WINNER = re.compile(r"^\W*winner\W*(?:program\W*)?([AB])\W*$", re.IGNORECASE | re.MULTILINE)
_BARE = re.compile(r"^\W*(?:program\W*)?([AB])\W*$", re.IGNORECASE)


def order(problem_id: str, round_: int) -> list[Side]:
    """Which program is shown as A and which as B, for this problem and round."""
    revision_first = random.Random(f"compare:{problem_id}:{round_}").random() < 0.5
    return ["revision", "program"] if revision_first else ["program", "revision"]


def parse_winner(text: str) -> Literal["A", "B"] | None:
    """The letter a reply names as the winner: its `Winner: X` lines, which must agree, or a bare
    `A`/`B` as the whole reply. Anything else names no winner."""
    named = {m.group(1).upper() for m in _WINNER.finditer(text)}
    if not named:
        bare = _BARE.match(text.strip())
        named = {bare.group(1).upper()} if bare else set()
    if named == {"A"}:
        return "A"
    if named == {"B"}:
        return "B"
    return None


def decide(ctx: RunContext, due: list[Trajectory], model: str, round_: int) -> StageReport:
    """One decision per revision of round `round_` that has been solved (and not decided by an earlier run)."""
    start = time.monotonic()
    name = f"compare-{round_}"
    stage = ctx.store.file(name, DecisionRecord)
    revised = [t for t in due if round_ in t.refined and t.refined[round_].revision() and round_ in t.solved]
    todo = [t for t in revised if round_ not in t.decided or t.decided[round_].retry()]
    prompt = ctx.prompts.get(PROMPT)
    by_id = {t.id: t for t in todo}
    written = 0

    def write(record: DecisionRecord) -> None:
        nonlocal written
        stage.write(record)
        by_id[record.id].set_decided(record)
        written += 1
        ctx.progress(name, written, len(todo))

    requests = []
    for trajectory in todo:
        revision, solved = trajectory.refined[round_], trajectory.solved[round_]
        parent = trajectory.latest_program(before=round_)
        base: dict[str, Any] = {"id": trajectory.id, "dataset": ctx.task.dataset, "round": round_,
                                "program": program_sha(revision), "parent": revision.parent}
        if revision.error is not None or not revision.programs():
            error = revision.error or StageError(category=ErrorCategory.no_program, message="empty revision")
            write(DecisionRecord(**base, revised=False, outcome="no_revision", error=error))
        elif parent is None or program_sha(revision) == revision.parent:
            write(DecisionRecord(**base, revised=False, outcome="unchanged"))
        elif not executed(solved.error):
            note = f"{solved.error.category.value}: {solved.error.message}" if solved.error else None
            write(DecisionRecord(**base, revised=False, outcome="not_executed", note=note))
        else:
            shown = order(trajectory.id, round_)
            texts = {"program": parent.program or "", "revision": revision.program or ""}
            messages = prompt.render(program_a=texts[shown[0]], program_b=texts[shown[1]],
                                     **problem_fields(trajectory.problem))
            requests.append(Request(trajectory.id, messages, 0.0, ctx.config.max_tokens, purpose=PROMPT,
                                    problem=trajectory.id))

    def arrived(request: Request, result: Result) -> None:
        trajectory = by_id[request.key]
        revision = trajectory.refined[round_]
        shown = order(trajectory.id, round_)
        found: dict[str, Any] = {"id": trajectory.id, "dataset": ctx.task.dataset, "round": round_, "order": shown,
                                 "program": program_sha(revision), "parent": revision.parent, "usage": usage([result])}
        if isinstance(result, Exception):
            write(DecisionRecord(**found, revised=False, outcome="no_winner", error=stage_error(result)))
            return
        winner = parse_winner(result.text)
        if winner is None:
            error = StageError(category=ErrorCategory.no_answer,
                               message="the comparison's reply names no winner (no 'Winner: A' or 'Winner: B')")
            write(DecisionRecord(**found, revised=False, outcome="no_winner", reply=result.text, error=error))
            return
        won = shown["AB".index(winner)] == "revision"
        outcome: Outcome = "won" if won else "lost"
        write(DecisionRecord(**found, revised=won, outcome=outcome, winner=winner, reply=result.text))

    send(ctx, model, requests, arrived)
    stage.finish([t.id for t in revised])
    return StageReport(name, len(revised), len(todo), time.monotonic() - start)
