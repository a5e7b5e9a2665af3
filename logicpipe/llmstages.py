"""The stages that ask a language model: formulate, refine, the cot backup and the baselines.

Every request goes through llm.LLMClient; results are written as each one arrives, so a killed run
keeps what it had and the cache makes the re-run free.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .config import RunConfig
from .llm import Completion, LLMClient, LLMError, Request
from .prompts import extract_choice, extract_program, guide, problem_fields, render
from .records import ErrorCategory, FormulateRecord, Problem, SolveRecord, StageError, Usage
from .solvers.base import option_letters
from .stagefile import StageFile

Progress = Callable[[str, int, int], None]
REFINABLE = {ErrorCategory.parse, ErrorCategory.execution, ErrorCategory.timeout}


def send(config: RunConfig, model: str, requests: list[Request],
         arrived: Callable[[Request, Completion | LLMError], None]) -> None:
    """Send the requests through one client for `model`, calling `arrived` as each reply ends."""
    client = LLMClient(config.llm_settings(model))
    try:
        client.run(requests, arrived)
    finally:
        client.close()


def _usage(results: list[Completion | LLMError]) -> Usage:
    done = [r for r in results if isinstance(r, Completion)]
    return Usage(prompt_tokens=sum(r.prompt_tokens for r in done),
                 completion_tokens=sum(r.completion_tokens for r in done),
                 calls=len(results), cached_calls=sum(r.cached for r in done))


def formulate_with_model(config: RunConfig, problems: list[Problem], stage: StageFile, todo: list[str],
                         progress: Progress) -> None:
    """K samples per problem (K = num_samples); one formulate record once all K are back."""
    assert config.model is not None
    by_id = {p.id: p for p in problems}
    samples = config.num_samples
    requests = [Request(f"{pid}\x1f{i}", render(config.spec.key, **problem_fields(by_id[pid])),
                        config.temperature, config.max_tokens, sample=i, purpose="formulate", problem=pid)
                for pid in todo for i in range(samples)]
    pending: dict[str, dict[int, Completion | LLMError]] = {pid: {} for pid in todo}
    written = 0
    with stage.writer() as out:
        def arrived(request: Request, result: Completion | LLMError) -> None:
            nonlocal written
            pid, index = request.key.split("\x1f")
            pending[pid][int(index)] = result
            if len(pending[pid]) < samples:
                return
            arrived_samples = pending.pop(pid)
            results = [arrived_samples[i] for i in range(samples)]
            programs = [extract_program(r.text) for r in results if isinstance(r, Completion)]
            errors = [str(r) for r in results if isinstance(r, LLMError)]
            error = None if programs else StageError(category=ErrorCategory.llm, message=errors[0])
            out.write(FormulateRecord(id=pid, dataset=config.spec.key, program=programs[0] if programs else None,
                                      samples=programs if samples > 1 else [], source=f"llm:{config.model}",
                                      usage=_usage(results), error=error))
            written += 1
            progress("formulate", written, len(todo))

        send(config, config.model, requests, arrived)


def refine_round(config: RunConfig, problems: list[Problem], failing: list[SolveRecord],
                 programs: dict[str, str], round_: int, progress: Progress) -> int:
    """Send each failing program with the solver's exact error back to the model, once; return how
    many requests this call made (the rest were done by an earlier, interrupted run)."""
    model = config.refine_model or config.model
    assert model is not None
    name = f"refine-{round_}"
    stage = StageFile(config.stage_file(name), FormulateRecord)
    todo = [r for r in failing if r.id not in stage.done]
    if todo:
        by_id = {p.id: p for p in problems}
        hints = guide(config.spec.solver)
        requests = []
        for record in todo:
            assert record.error is not None
            fields = problem_fields(by_id[record.id])
            requests.append(Request(record.id, render("refine", program=programs[record.id],
                                                      error=record.error.message, guide=hints, **fields),
                                    0.0, config.max_tokens, purpose="refine", problem=record.id))
        written = 0
        with stage.writer() as out:
            def arrived(request: Request, result: Completion | LLMError) -> None:
                nonlocal written
                ok = isinstance(result, Completion)
                out.write(FormulateRecord(
                    id=request.key, dataset=config.spec.key, round=round_, source=f"refine:{model}",
                    program=extract_program(result.text) if ok else None, usage=_usage([result]),
                    error=None if ok else StageError(category=ErrorCategory.llm, message=str(result))))
                written += 1
                progress(name, written, len(todo))

            send(config, model, requests, arrived)
    stage.finish([r.id for r in failing])
    return len(todo)


@dataclass
class Answer:
    choice: str | None
    usage: Usage
    error: StageError | None


def ask(config: RunConfig, problems: list[Problem], prompt: str) -> dict[str, Answer]:
    """One Standard or chain-of-thought answer per problem (baselines and the `cot` backup)."""
    if not problems:
        return {}
    assert config.model is not None
    answers: dict[str, Answer] = {}
    by_id = {p.id: p for p in problems}

    def arrived(request: Request, result: Completion | LLMError) -> None:
        if isinstance(result, LLMError):
            answers[request.key] = Answer(None, _usage([result]),
                                          StageError(category=ErrorCategory.llm, message=str(result)))
            return
        choice = extract_choice(result.text, sorted(option_letters(by_id[request.key].options)))
        error = None if choice else StageError(category=ErrorCategory.no_answer,
                                               message="the reply names no option letter")
        answers[request.key] = Answer(choice, _usage([result]), error)

    send(config, config.model, [Request(p.id, render(prompt, **problem_fields(p)), config.temperature,
                                        config.max_tokens, purpose=prompt, problem=p.id) for p in problems],
         arrived)
    return answers
