"""`logicpipe kb ...`: a thin typer layer over logicpipe.kb's Python API."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer

from ..core.errors import UsageError
from ..core.words import counted
from ..typer_app import App

# Every `logicpipe` command loads this module to register `kb`; what the kb commands run is imported
# inside them, so that the other commands do not pay for it at start-up.
if TYPE_CHECKING:
    from ..llm import LLMClient
    from ..prompts import PromptSet
    from .add import Mode
    from .batch import Batch, BatchReport
    from .flow import Flow, Input, Settings
    from .knowledge import KnowledgeBase, Percept
    from .prolog import ProofLimits

kb_app = App(no_args_is_help=True, help="Answer questions from, and check answers against, a Prolog KB.")

_FORMATS = ("text", "json", "dot", "mermaid")


@kb_app.callback()
def _layers(require_jail: bool = typer.Option(
        False, "--require-jail", help="refuse to run a KB without the OS jail (bubblewrap, seccomp, Landlock) "
                                      "rather than with the language layers alone"),
        no_jail: bool = typer.Option(False, "--no-jail", help="run the KB without the OS jail, so that builtins "
                                     "given to its rules with --allow (files, shell) can reach the machine")) -> None:
    """Answer questions from, and check answers against, a Prolog KB."""
    from ..core import jail

    if require_jail and no_jail:
        raise UsageError("--require-jail and --no-jail contradict each other: give one")
    jail.switch_off("--no-jail" if no_jail else None)
    found = jail.status()
    if require_jail:
        jail.require(found)
    elif not found.active and not no_jail:  # one line, then the language layers alone (docs/kb.md)
        typer.echo(f"note: {found.line()}: the KB runs with the language layers only", err=True)


def _limits(depth: int, inferences: int, seconds: float, memory_mb: int, max_solutions: int) -> ProofLimits:
    from .prolog import ProofLimits

    if min(depth, inferences, memory_mb, max_solutions) < 1 or seconds <= 0:
        raise UsageError("--depth, --inferences, --time, --memory-mb and --max-solutions must be positive")
    return ProofLimits(depth, inferences, seconds, memory_mb, max_solutions)


def _percepts(percept: list[str], percepts_file: Optional[Path]) -> list[Percept]:
    from .knowledge import parse_percept, read_percepts

    found = read_percepts(percepts_file) if percepts_file else []
    return found + [parse_percept(p) for p in percept]


def _open(path: Path, limits: ProofLimits, percepts: list[Percept], allow: Sequence[str] = ()) -> KnowledgeBase:
    """A KB that loads without errors; its warnings are shown, not dropped."""
    import re

    from .knowledge import KnowledgeBase

    for item in allow:
        if not re.fullmatch(r"[a-z][A-Za-z0-9_]*/\d+", item):
            raise UsageError(f"--allow {item}: expected a builtin's name/arity, such as open/4 or shell/1")
    base = KnowledgeBase(path, limits, percepts, tuple(allow))
    try:
        base.require_clean()
    except UsageError:
        base.close()
        raise
    for message in base.messages:
        typer.echo(str(message), err=True)
    return base


_DEPTH = typer.Option(64, "--depth", help="levels of KB calls shown in each goal tree (at most 64); proofs are bounded by the other limits")
_INFERENCES = typer.Option(2_000_000, "--inferences", help="most logical inferences per proof")
_TIME = typer.Option(5.0, "--time", help="seconds per proof")
_MEMORY = typer.Option(512, "--memory-mb", help="Prolog stack MB per proof")
_SOLUTIONS = typer.Option(10, "--max-solutions", help="solutions reported per goal")
_PERCEPT = typer.Option([], "--percept", help="real-time value name=value, asserted as name(value)")
_PERCEPTS_FILE = typer.Option(None, "--percepts", help="file of name=value lines")
_ALLOW = typer.Option([], "--allow", help="a builtin (name/arity, repeatable) that the KB's own rules may call on a "
                                          "goal's behalf although library(sandbox) refuses it (files, shell, ...)")


@kb_app.command()
def check(kb: list[Path] = typer.Argument(..., help="KB files, or folders whose .pl files load together"),
          format: str = typer.Option("text", "--format", "-f", help="text or json (one object per KB)"),
          time: float = typer.Option(60.0, "--time", help="seconds for loading and checking each KB"),
          memory_mb: int = typer.Option(1024, "--memory-mb", help="Prolog stack MB")) -> None:
    """Load each KB in an isolated SWI-Prolog and report what its own checks find: load errors, undefined
    procedures, unreachable, discontiguous and duplicate clauses, left recursion; list the predicates.
    Exit 1 when a KB does not load or calls an undefined procedure."""
    from .check import check_kb

    if format not in ("text", "json"):
        raise UsageError("--format must be text or json")
    if time <= 0 or memory_mb < 1:
        raise UsageError("--time and --memory-mb must be positive")
    reports = [check_kb(path, time, memory_mb) for path in kb]  # every KB is read before any is shown
    for report in reports:
        if format == "json":
            typer.echo(report.model_dump_json())
            continue
        for line in report.findings():
            typer.echo(line, err=True)
        for predicate in sorted(report.predicates, key=lambda p: (p.module != "kb", p.module, p.name, p.arity)):
            kind = "".join(f" ({flag})" for flag in ("dynamic", "tabled") if getattr(predicate, flag))
            typer.echo(f"{predicate.signature:<28} {predicate.clauses:>5} {'clause ' if predicate.clauses == 1 else 'clauses'}  {predicate.file}{kind}")
    if format == "text":
        from ..core import jail

        typer.echo(f"isolation: {jail.layers_summary()[0]}", err=True)
    if any(report.failed for report in reports):
        sys.exit(1)  # typer.Exit's code is lost under main()'s standalone_mode=False


@kb_app.command()
def prove(kb: Path = typer.Argument(..., help="KB file or folder"),
          goals: list[str] = typer.Argument(..., help="goals such as 'ancestor(tom, X)'"),
          format: str = typer.Option("text", "--format", "-f", help="text, json, dot or mermaid"),
          depth: int = _DEPTH, inferences: int = _INFERENCES, time: float = _TIME, memory_mb: int = _MEMORY,
          max_solutions: int = _SOLUTIONS, percept: list[str] = _PERCEPT,
          percepts: Optional[Path] = _PERCEPTS_FILE, allow: list[str] = _ALLOW) -> None:
    """Backward-chain each goal through the KB; print bindings and goal trees. Exit 1 if one fails.

    A goal that may not run is refused before anything runs (exit 2) when it is the only one; among
    several, it is that goal's `unknown` and the others are answered."""
    from .render import dot, mermaid, text_result

    if format not in _FORMATS:
        raise UsageError(f"--format must be one of {', '.join(_FORMATS)}")
    limits = _limits(depth, inferences, time, memory_mb, max_solutions)
    with _open(kb, limits, _percepts(percept, percepts), allow) as base:
        checked = [_checked(base, goal, alone=len(goals) == 1) for goal in goals]  # all before any runs
        results = [base.prove_term(term) if not isinstance(term, dict) else term for term in checked]
    if format == "json":
        for result in results:
            typer.echo(json.dumps(result, ensure_ascii=False))
    elif format == "dot":
        typer.echo(dot(results))
    elif format == "mermaid":
        typer.echo(mermaid(results))
    else:
        typer.echo("\n\n".join(text_result(r) for r in results))
    if not all(r["proved"] for r in results):
        sys.exit(1)


def _checked(base: KnowledgeBase, goal: str, alone: bool) -> Any:
    """The goal's term, or (among several goals) the `unknown` result of a goal that cannot run."""
    from ..core.errors import ProgramParseError
    from .knowledge import UNKNOWN, printable

    try:
        return base.check(goal)
    except ProgramParseError as exc:
        if alone:
            raise
        return {"goal": printable(goal), "status": UNKNOWN, "proved": False, "solutions": [], "truncated": False,
                "reason": str(exc)}


_MODEL = typer.Option(..., "--model", "-m", help="model (OpenAI-compatible chat endpoint)")
_BASE_URL = typer.Option(None, "--base-url", envvar="OPENAI_BASE_URL", help="e.g. http://localhost:8000/v1")
_CACHE = typer.Option(None, "--llm-cache", help="SQLite cache of model replies")
_CONCURRENCY = typer.Option(8, "--max-concurrency", help="model requests in flight at once")
_OUT = typer.Option(None, "--out", "-o", help="run folder for a batch (run.json, ask.jsonl or validate.jsonl); "
                                              "a re-run resumes it")
_OVERWRITE = typer.Option(False, "--overwrite", help="discard what an earlier batch wrote in --out and start afresh")
_MAX_ERRORS = typer.Option("10%", "--max-errors", help="model errors a batch tolerates before it stops: a count "
                                                       "or a percentage of the inputs")
_PROMPTS = typer.Option(None, "--prompts", help="folder of templates replacing the shipped kb-*.txt ones")
_TEMPERATURE = typer.Option(0.0, "--temperature", help="sampling temperature of the model's requests")
_MAX_TOKENS = typer.Option(1024, "--max-tokens", help="most tokens in a model reply")


_PRICE_PROMPT = typer.Option(None, "--price-prompt", help="price per million prompt tokens")
_PRICE_COMPLETION = typer.Option(None, "--price-completion", help="price per million completion tokens")
_MAX_COST = typer.Option(None, "--max-cost", help="send no new model request once this much was spent (needs the "
                                                  "prices); with --out, counted over the runs into that folder, so a "
                                                  "re-run with a higher cap finishes the batch")
_MAX_TOKENS_TOTAL = typer.Option(None, "--max-tokens-total", help="send no new model request once this many tokens "
                                                                  "(prompt and completion) were used; counted as "
                                                                  "--max-cost is")
_BATCH = typer.Option(False, "--batch", help="with --out: send each wave of requests the cache cannot answer through "
                                             "the provider's batch API (/v1/files, /v1/batches: about half the "
                                             "price) and wait for it; the batch ids go to batches.json in the "
                                             "--out folder, so a re-run resumes them")
_BATCH_SIZE = typer.Option(50_000, "--batch-size", help="most requests in one --batch batch (at most 50000, the "
                                                        "OpenAI API's limit; a file also stays under 200 MB)")
_BATCH_TIMEOUT = typer.Option(86400.0, "--batch-timeout", help="seconds a command waits for its --batch batches "
                                                               "before it stops (a re-run resumes them)")
_BATCH_POLL = typer.Option(30.0, "--batch-poll", help="most seconds between two looks at a running --batch batch")


def _model_options(out: Optional[Path], inputs: str, batched: bool, model: str, spend: dict[str, Any]) -> None:
    """The spending cap and --batch options, checked as `run` checks them (one line each, exit 2) before the
    KB loads and before anything is written: a cap needs prices, --batch needs a batch and is refused
    beside a cap, the bounds."""
    from pydantic import ValidationError

    from ..stages.config import ModelOptions, invalid_options

    if spend.get("batch") and not batched:
        raise UsageError(f"--batch needs a batch: {inputs} FILE and --out DIR (one input is asked at once)")
    try:
        ModelOptions.model_validate({"out": out or Path("."), "model": model, **spend}, context={"writes": False})
    except ValidationError as exc:
        raise invalid_options(exc) from None


def _client(model: str, base_url: Optional[str], cache: Optional[Path], concurrency: int,
            out: Optional[Path] = None, spend: Optional[dict[str, Any]] = None) -> LLMClient:
    """A client for options checked as `run` checks them (ModelOptions: the URL, the cache and the batch
    folder can be written, the bounds), one line each, before anything is written. `spend` (--max-cost
    with the prices, --max-tokens-total) puts the client behind `run`'s spending cap, its ledger in the
    batch's folder (none for one input: the cap is then this command's); or (--batch and its options)
    behind the provider's batch API, its batches recorded in the batch's folder (OUT/batches.json)."""
    from pydantic import ValidationError

    from ..llm import LLMClient, LLMSettings
    from ..llm.gate import Gate
    from ..stages.config import ModelOptions, invalid_options, writable

    try:
        options = ModelOptions.model_validate(
            {"out": out or Path("."), "model": model, "base_url": base_url, "llm_cache": cache,
             "max_concurrency": concurrency, **(spend or {})}, context={"writes": out is not None})
        if out is None and cache is not None:  # one input writes no folder, but it writes the cache
            writable(cache, folder=False)
    except ValidationError as exc:
        raise invalid_options(exc) from None
    except ValueError as exc:
        raise UsageError(f"invalid option --llm-cache: {exc}") from None
    gate: Gate | None = None
    if out is not None and not options.batch:
        from ..llm.batchapi import refuse_unread

        refuse_unread(out)
    if options.capped:
        from ..llm.budget import Budget

        gate = Budget(options, folder=out, ledger=out is not None)
    elif options.batch:
        from ..llm.batchapi import BatchAPI

        assert out is not None  # _model_options: --batch needs a batch's folder
        gate = BatchAPI(out, options.base_url, options.llm_cache, 1, batch_requests=options.batch_requests,
                        timeout=options.batch_timeout, poll=options.batch_poll,
                        request_timeout=options.llm_timeout, retries=options.max_retries)
    return LLMClient(LLMSettings(model=model, base_url=options.base_url, cache_path=options.llm_cache,
                                 max_concurrency=options.max_concurrency), gate=gate)


def _one_or_batch(single: Optional[str], batch: Optional[Path], out: Optional[Path], what: str,
                  format: str) -> None:
    if format not in ("text", "json"):
        raise UsageError("--format must be text or json")
    if (single is None) == (batch is None):
        raise UsageError(f"give one {what} or a JSONL file of them, not both and not neither")
    if batch is not None and out is None:
        raise UsageError("--out is required with a JSONL input")
    if batch is None and out is not None:
        raise UsageError(f"--out is for a batch (a JSONL file of {what}s); one {what} is printed")
    if out is not None and out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} is a file; a batch writes a run folder (run.json and its records)")


def _prompts(folder: Optional[str], used: tuple[str, ...]) -> PromptSet:
    from ..prompts import PromptSet, prompts_option

    prompts = PromptSet(prompts_option(folder))
    prompts.check_overrides(list(used))
    for prompt_id in used:
        prompts.get(prompt_id)  # a folder's template that lacks a field is refused before anything runs
    return prompts


def _single(client: LLMClient, batch: Batch, item: Input, make_flow: Callable[[Input], Flow],
            percepts: list[Percept]) -> Any:
    """One input's record, made as a batch makes it (a failure is its error record)."""
    from .flow import run_flows

    records: list[Any] = []
    try:
        run_flows(client, [(item.id, make_flow(item))], records.append,
                  failed=lambda _key, exc: batch.error_record(item, exc, [str(p) for p in percepts]))
    finally:
        client.close()
    return records[0]


def _identity(kb: Path, inputs: Path, stage: str, fields: dict[str, Any]) -> dict[str, Any]:
    from .batch import kb_sha256

    return {"kb": kb.name, "kb_sha256": kb_sha256(kb), "inputs": inputs.name, "stages": {stage: fields}}


def _model_fields(model: str, base_url: Optional[str], settings: Settings, prompts: PromptSet,
                  used: tuple[str, ...], limits: ProofLimits, percepts: list[Percept],
                  allow: list[str]) -> dict[str, Any]:
    """What decides a batch's records besides the KB and its inputs (--allow only when given, so that
    folders written before it existed resume)."""
    from dataclasses import asdict

    return {"model": model, "base_url": base_url, "temperature": settings.temperature,
            "max_tokens": settings.max_tokens, "prompts": prompts.identity(*used),
            "limits": asdict(limits), "percepts": [str(p) for p in percepts],
            **({"allow": sorted(allow)} if allow else {})}


def _report(out: Path, report: BatchReport) -> None:
    from ..core import stats

    interval = stats.percent(stats.wilson(report.errors, report.total))
    rate = ("" if interval is None else  # no record: no rate, rather than a 0% that was never measured
            f"; error rate {100 * report.errors / report.total:.2f}% [{interval[0]:.1f}, {interval[1]:.1f}] "
            f"(95% Wilson interval, n={report.total})")
    typer.echo(f"{out}: {counted(report.total, 'record')} ({report.new} new, {report.errors} with errors){rate}", err=True)
    if report.batches is not None:
        created, resumed = report.batches
        typer.echo(f"{out}: {counted(created, 'batch')} created, {resumed} of an earlier run read (ids in "
                   f"{out / 'batches.json'})", err=True)


def _spend(price_prompt: Optional[float], price_completion: Optional[float], max_cost: Optional[float],
           max_tokens_total: Optional[int], batch: bool, batch_size: int, batch_timeout: float,
           batch_poll: float) -> dict[str, Any]:
    """The ModelOptions fields of the spending cap and of --batch."""
    return {"price_prompt": price_prompt, "price_completion": price_completion, "max_cost": max_cost,
            "max_tokens_total": max_tokens_total, "batch": batch, "batch_requests": batch_size,
            "batch_timeout": batch_timeout, "batch_poll": batch_poll}


@kb_app.command()
def ask(kb: Path = typer.Argument(..., help="KB file or folder"),
        question: Optional[str] = typer.Argument(None, help="a question in English"),
        questions: Optional[Path] = typer.Option(None, "--questions", help="JSONL of {id, question}"),
        out: Optional[Path] = _OUT, overwrite: bool = _OVERWRITE, max_errors: str = _MAX_ERRORS,
        context: str = typer.Option("template", "--context", help="template (default) or model"),
        format: str = typer.Option("text", "--format", "-f", help="text or json (one question)"),
        model: str = _MODEL, base_url: Optional[str] = _BASE_URL, llm_cache: Optional[Path] = _CACHE,
        max_concurrency: int = _CONCURRENCY, prompts: Optional[str] = _PROMPTS,
        temperature: float = _TEMPERATURE, max_tokens: int = _MAX_TOKENS,
        depth: int = _DEPTH, inferences: int = _INFERENCES, time: float = _TIME, memory_mb: int = _MEMORY,
        max_solutions: int = _SOLUTIONS, percept: list[str] = _PERCEPT,
        percepts: Optional[Path] = _PERCEPTS_FILE, allow: list[str] = _ALLOW,
        price_prompt: Optional[float] = _PRICE_PROMPT, price_completion: Optional[float] = _PRICE_COMPLETION,
        max_cost: Optional[float] = _MAX_COST, max_tokens_total: Optional[int] = _MAX_TOKENS_TOTAL,
        batch_api: bool = _BATCH, batch_size: int = _BATCH_SIZE, batch_timeout: float = _BATCH_TIMEOUT,
        batch_poll: float = _BATCH_POLL) -> None:
    """Answer questions grounded in the KB: goals, proofs, context, then the model's answer."""
    from .ask import AskRecord, ask_flow, vocabulary
    from .batch import Batch, budget, run_batch
    from .flow import Input, Settings, read_inputs
    from .render import text_result

    batch = Batch("ask", AskRecord, "question")
    _one_or_batch(question, questions, out, "question", format)
    if context not in ("template", "model"):
        raise UsageError("--context must be template or model")
    used = ("kb-goals", "kb-answer", *(("kb-context",) if context == "model" else ()))
    templates = _prompts(prompts, used)
    settings = Settings(temperature=temperature, max_tokens=max_tokens)
    limits = _limits(depth, inferences, time, memory_mb, max_solutions)
    inputs = read_inputs(questions, "question") if questions is not None else []
    if questions is not None:
        budget(max_errors, len(inputs))  # a bad --max-errors is refused before the KB loads
    spend = _spend(price_prompt, price_completion, max_cost, max_tokens_total, batch_api, batch_size, batch_timeout,
                   batch_poll)
    _model_options(out, "--questions", questions is not None, model, spend)  # one line before the KB loads
    with _open(kb, limits, _percepts(percept, percepts), allow) as base:
        words = vocabulary(base)
        client = _client(model, base_url, llm_cache, max_concurrency, out, spend)

        def make_flow(item: Input) -> Flow:
            return ask_flow(base, item, settings, context, words, templates)

        if questions is None:
            record = _single(client, batch, Input(id="cli", text=question or ""), make_flow, base.percepts)
        else:
            assert out is not None
            fields = {**_model_fields(model, base_url, settings, templates, used, limits, base.percepts, allow),
                      "context": context}
            _report(out, run_batch(batch, out, inputs, _identity(kb, questions, "ask", fields), client, make_flow,
                                   percepts=fields["percepts"], overwrite=overwrite, max_errors=max_errors))
            return
    if format == "json":
        typer.echo(record.model_dump_json())
        return
    for result in record.results:
        typer.echo(text_result(result) + "\n")
    for rejected in record.rejected:
        typer.echo(f"rejected: {rejected}")
    if record.context:
        typer.echo(f"context:\n{record.context}\n")
    typer.echo(f"answer: {record.answer or (record.error.message if record.error else '')}")


@kb_app.command()
def validate(kb: Path = typer.Argument(..., help="KB file or folder"),
             answer: Optional[str] = typer.Option(None, "--answer", help="an answer to check"),
             answers: Optional[Path] = typer.Option(None, "--answers", help="JSONL of {id, answer}"),
             out: Optional[Path] = _OUT, overwrite: bool = _OVERWRITE, max_errors: str = _MAX_ERRORS,
             format: str = typer.Option("text", "--format", "-f", help="text or json (one answer)"),
             model: str = _MODEL, base_url: Optional[str] = _BASE_URL, llm_cache: Optional[Path] = _CACHE,
             max_concurrency: int = _CONCURRENCY, prompts: Optional[str] = _PROMPTS,
             temperature: float = _TEMPERATURE, max_tokens: int = _MAX_TOKENS,
             depth: int = _DEPTH, inferences: int = _INFERENCES, time: float = _TIME, memory_mb: int = _MEMORY,
             percept: list[str] = _PERCEPT, percepts: Optional[Path] = _PERCEPTS_FILE,
             allow: list[str] = _ALLOW,
             price_prompt: Optional[float] = _PRICE_PROMPT, price_completion: Optional[float] = _PRICE_COMPLETION,
             max_cost: Optional[float] = _MAX_COST, max_tokens_total: Optional[int] = _MAX_TOKENS_TOTAL,
             batch_api: bool = _BATCH, batch_size: int = _BATCH_SIZE, batch_timeout: float = _BATCH_TIMEOUT,
             batch_poll: float = _BATCH_POLL) -> None:
    """Check an answer claim by claim against the KB; valid only when every claim is true. One answer:
    exit 0 valid, 1 not valid, 3 unknown (the model's reply named no claim that could be read)."""
    from .ask import vocabulary
    from .batch import Batch, budget, run_batch
    from .flow import Input, Settings, read_inputs
    from .render import text_tree
    from .validate import ValidateRecord, validate_flow

    batch = Batch("validate", ValidateRecord, "answer")
    _one_or_batch(answer, answers, out, "answer", format)
    used = ("kb-claims",)
    templates = _prompts(prompts, used)
    settings = Settings(temperature=temperature, max_tokens=max_tokens)
    limits = _limits(depth, inferences, time, memory_mb, 1)
    inputs = read_inputs(answers, "answer") if answers is not None else []
    if answers is not None:
        budget(max_errors, len(inputs))
    spend = _spend(price_prompt, price_completion, max_cost, max_tokens_total, batch_api, batch_size, batch_timeout,
                   batch_poll)
    _model_options(out, "--answers", answers is not None, model, spend)  # one line before the KB loads
    with _open(kb, limits, _percepts(percept, percepts), allow) as base:
        words = vocabulary(base)
        client = _client(model, base_url, llm_cache, max_concurrency, out, spend)

        def make_flow(item: Input) -> Flow:
            return validate_flow(base, item, settings, words, templates)

        if answers is None:
            record = _single(client, batch, Input(id="cli", text=answer or ""), make_flow, base.percepts)
        else:
            assert out is not None
            fields = _model_fields(model, base_url, settings, templates, used, limits, base.percepts, allow)
            _report(out, run_batch(batch, out, inputs, _identity(kb, answers, "validate", fields), client,
                                   make_flow, percepts=fields["percepts"], overwrite=overwrite,
                                   max_errors=max_errors))
            return
    if format == "json":
        typer.echo(record.model_dump_json())
    else:
        for claim in record.claims:
            typer.echo(f"[{claim.verdict}] {claim.claim}  ?- {claim.goal or '-'}"
                       + (f"\n    {claim.reason}" if claim.reason else ""))
            if claim.proof and claim.verdict == "true":
                typer.echo("\n".join("    " + line for line in text_tree(claim.proof)))
        # A reply that could not be read (or a request that failed) checked no claim: that is no verdict
        # on the answer, unlike a claim the KB does not derive.
        typer.echo(f"valid: unknown (no claim was checked: {record.error.message})" if record.error
                   else f"valid: {'yes' if record.valid else 'no'}")
    if record.error is not None:
        sys.exit(3)
    if not record.valid:
        sys.exit(1)


_FACT = typer.Option([], "--fact", help="a fact to add or remove as written, e.g. 'student(zoe)' (repeatable)")
_YES = typer.Option(False, "--yes", help="write without asking (for scripts)")
_DRY_RUN = typer.Option(False, "--dry-run", help="show the diff and write nothing")


@kb_app.command()
def add(kb: Path = typer.Argument(..., help="KB file or folder to change"),
        statement: Optional[str] = typer.Argument(None, help="a statement in English (needs --model)"),
        fact: list[str] = _FACT,
        remove: bool = typer.Option(False, "--remove", help="retract the facts instead (as kb retract)"),
        yes: bool = _YES, dry_run: bool = _DRY_RUN,
        model: Optional[str] = typer.Option(None, "--model", "-m", help="model that translates the statement"),
        base_url: Optional[str] = _BASE_URL, llm_cache: Optional[Path] = _CACHE,
        prompts: Optional[str] = _PROMPTS) -> None:
    """Add facts to the KB: each is checked against the KB's own facts (predicate and arity, argument
    types, duplicates), the change is shown as a diff and written when confirmed, with a backup."""
    _change(kb, statement, fact, "remove" if remove else "add", yes, dry_run, model, base_url, llm_cache, prompts)


@kb_app.command()
def retract(kb: Path = typer.Argument(..., help="KB file or folder to change"),
            statement: Optional[str] = typer.Argument(None, help="a statement in English (needs --model)"),
            fact: list[str] = _FACT, yes: bool = _YES, dry_run: bool = _DRY_RUN,
            model: Optional[str] = typer.Option(None, "--model", "-m", help="model that translates the statement"),
            base_url: Optional[str] = _BASE_URL, llm_cache: Optional[Path] = _CACHE,
            prompts: Optional[str] = _PROMPTS) -> None:
    """Remove facts from the KB (the same as kb add --remove): shown as a diff, written when confirmed."""
    _change(kb, statement, fact, "remove", yes, dry_run, model, base_url, llm_cache, prompts)


def _change(kb: Path, statement: Optional[str], facts: list[str], mode: Mode, yes: bool, dry_run: bool,
            model: Optional[str], base_url: Optional[str], llm_cache: Optional[Path],
            prompts_dir: Optional[str]) -> None:
    from ..prompts import PromptSet, prompts_option
    from .add import PROMPT, diff, edited, judge, translate_flow, write
    from .ask import vocabulary
    from .flow import Settings, run_flows
    from .prolog import ProofLimits

    if statement is None and not facts:
        raise UsageError("give a statement (with --model) or facts with --fact")
    if statement is not None and model is None:
        raise UsageError("--model is needed to translate a statement (or give the facts with --fact)")
    if not (yes or dry_run or sys.stdin.isatty()):
        raise UsageError("stdin is not a terminal, so the change cannot be confirmed: pass --yes to write it, "
                         "or --dry-run to only show it")
    prompts = PromptSet(prompts_option(prompts_dir))
    prompts.check_overrides([PROMPT[mode]])
    texts = list(facts)
    if statement is not None:
        assert model is not None
        with _open(kb, ProofLimits(), []) as base:
            words = vocabulary(base)
        found: list[list[str]] = []
        client = _client(model, base_url, llm_cache, 1)
        try:
            run_flows(client, [(mode, translate_flow(statement, mode, prompts, words, Settings()))], found.append)
        finally:
            client.close()
        if not found[0]:
            typer.echo("the model wrote no fact for the statement (NONE)", err=True)
        texts += found[0]
    judgement = judge(kb, mode, texts)
    if judgement.errors:
        raise UsageError(f"the KB does not load: {judgement.errors[0]}")
    for item in judgement.facts:
        if item.status == "refused":
            typer.echo(f"refused: {item.text} -- {item.reason}", err=True)
        elif item.status != ("new" if mode == "add" else "present"):
            typer.echo(f"skipped: {item.fact or item.text} -- {item.reason}", err=True)
    chosen = judgement.changes(mode)
    refused = any(item.status == "refused" for item in judgement.facts)
    if not chosen:
        if refused:
            raise UsageError("nothing to write: every fact was refused or already so")
        typer.echo("nothing to change", err=True)
        return
    changes = edited(chosen, mode)
    typer.echo(diff(changes), nl=False)
    if dry_run:
        typer.echo("(dry run: nothing written)", err=True)
        return
    if not yes and not typer.confirm(f"Write {len(chosen)} change(s) to {', '.join(map(str, changes))}?"):
        typer.echo("nothing written", err=True)
        return
    backups = write(kb, changes, mode, chosen, judgement)
    verb = "added" if mode == "add" else "removed"
    typer.echo(f"{verb} {len(chosen)} fact(s); backup: {', '.join(map(str, backups))}", err=True)
    if refused:
        sys.exit(1)  # written, but not everything asked for
