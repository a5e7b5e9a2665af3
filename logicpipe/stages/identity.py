"""Run identity: everything that decides a dataset folder's results, as run/folder.py records it in run.json.

Each stage names the options that decide its records. A stage run against a directory whose run.json
recorded other values for them is refused, with the fields that differ; nothing is ever mixed silently.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from .. import __version__
from ..core.errors import UsageError
from ..core.records import text_sha
from ..data.loaders import data_root
from ..llm.constrain import grammar_hash
from ..prompts import Prompt
from ..runtime.folder import NOTES
from .config import RunConfig
from .context import RunContext

SEMANTIC = ("revise", "compare")  # the prompts semantic refinement adds


def file_sha256(path: Path) -> str:
    """The file's digest; for a folder of programs, of each file's name and bytes (the names are ids)."""
    digest = hashlib.sha256()
    files = sorted(f for f in path.iterdir() if not f.name.startswith(".")) if path.is_dir() else [path]
    for file in files:
        if path.is_dir():
            digest.update(file.name.encode() + b"\0" + str(file.stat().st_size).encode() + b"\0")
        with open(file, "rb") as handle:  # a block at a time: a million programs are a gigabyte
            while block := handle.read(1 << 20):
                digest.update(block)
    return digest.hexdigest()


def stage_identity(ctx: RunContext, stage: str) -> dict[str, Any]:
    config, prompts = ctx.config, ctx.prompts
    if stage == "formulate":
        if config.programs is not None:
            return {"programs": config.programs.name, "programs_sha256": file_sha256(config.programs)}
        return {"model": config.model, "base_url": config.base_url, "temperature": config.temperature,
                "num_samples": config.num_samples, "max_tokens": config.max_tokens,
                "prompts": prompts.identity(ctx.task.prompt), **_constraint(ctx),
                **_paper(ctx, prompts.get(ctx.task.prompt)), **_seed(config)}
    if stage == "solve":
        # `strict` only when set, so the run.json of runs made before the option existed still match.
        return {"solver": ctx.task.solver, "timeout": config.timeout or ctx.task.timeout,
                "memory_mb": config.memory_mb, **({"strict": True} if config.strict else {})}
    if stage == "refine":
        model = config.refine_with
        if model is None:
            return {"model": None}
        prompt = prompts.refine(ctx.task.prompt)
        used = {prompt.id: prompt.hash} if prompt.paper else prompts.identity("refine", f"guide-{ctx.task.solver}")
        refine = {"model": model, "base_url": config.base_url, "max_rounds": config.max_rounds,
                  "max_tokens": config.max_tokens, "prompts": used, **_constraint(ctx), **_paper(ctx, prompt)}
        if config.refine == "semantic":  # absent for error refinement, so older run.json files still match
            refine.update(mode="semantic", prompts={**used, **prompts.identity(*SEMANTIC)})
        return refine
    if stage == "interpret":
        fields: dict[str, Any] = {"backup": config.backup, "seed": config.seed}
        if config.backup == "cot":
            fields.update(model=config.model, base_url=config.base_url, temperature=config.temperature,
                          max_tokens=config.max_tokens, prompts=prompts.identity("cot"), **_seed(config))
        return fields
    if stage == "chain":  # a chain of prompted steps: its steps' templates (chain.py)
        from .chain import identity

        return identity(ctx)
    if stage in ("standard", "cot"):
        # num_samples only above 1 (self-consistency), so the run.json of single-answer baselines still match.
        samples = {"num_samples": config.num_samples} if config.num_samples > 1 else {}
        return {"model": config.model, "base_url": config.base_url, "temperature": config.temperature,
                "max_tokens": config.max_tokens, "prompts": prompts.identity(stage), **samples, **_seed(config)}
    return {}


def _seed(config: RunConfig) -> dict[str, Any]:
    """--epochs: epoch k > 1's sampling seed, which decides its replies; nothing in the first epoch, so
    that its run.json is that of a run without --epochs."""
    return {} if config.sample_seed is None else {"seed": config.sample_seed}


def _paper(ctx: RunContext, prompt: Prompt) -> dict[str, Any]:
    """--prompts logic-lm: Logic-LM's prompts and their stop marker; where Logic-LM had no prompt for a
    stage (self-correction on ProntoQA and ProofWriter), the identity says that ours stood in."""
    if not ctx.prompts.paper:
        return {}
    fields: dict[str, Any] = {"prompt_set": "logic-lm", "stop": list(prompt.stop)}
    if not prompt.paper:
        fields["note"] = (f"Logic-LM has no self-correction prompt for {ctx.task.name}: "
                          f"logicpipe's own '{prompt.id}' prompt stands in")
    return fields


def _constraint(ctx: RunContext) -> dict[str, Any]:
    """--constrain changes what a model may write: the grammar and the field it travels in."""
    if not ctx.config.constrain:
        return {"constrain": False}
    return {"constrain": True, "constrain_format": ctx.config.constrain_format,
            "grammar_sha256": grammar_hash(ctx.task.solver, ctx.config.max_tokens)}


def data_folder(config: RunConfig) -> str | None:
    """The Logic-LM data folder (absolute) the run reads its problems from, or None: the download cache,
    or a task whose data lies beside its file."""
    spec = config.spec
    if spec.source.format != "logic-lm" or spec.source.path is not None:
        return None
    root = data_root(config.data_dir)
    return str(root.resolve()) if root is not None else None


def check_identity(ctx: RunContext, stages: list[str]) -> dict[str, Any]:
    """Refuse a run whose options differ from what made the folder's records; then record them and
    return the folder's whole identity."""
    wanted: dict[str, Any] = {"dataset": ctx.task.dataset, "split": ctx.task.split, "limit": ctx.config.limit,
                              "logicpipe": __version__, "stages": {}}
    if ctx.task.definition is not None:
        wanted["task"] = ctx.task.definition
        if ctx.config.task is not None:  # where `view` and `explain` find the task (not part of identity)
            wanted["task_file"] = str(ctx.config.task.expanduser().resolve())
    used = data_folder(ctx.config)
    if used is not None:  # where `view` and `explain` find the problem texts (not part of identity)
        wanted["data_dir"] = used
    if ctx.config.method is not None:  # which published method made the run (its options are what binds)
        from ..data.methods import method_name

        wanted["method"] = method_name(ctx.config.method)
    if ctx.config.other_formalism is not None:  # absent for the task's own, so older run.json files still match
        wanted["formalism"] = ctx.config.other_formalism
    if ctx.config.ids is not None:  # a chosen subset (an optimiser's minibatch): only that subset resumes here
        wanted["ids"] = text_sha(*sorted(ctx.config.ids))
    if ctx.config.exclude_ids is not None:  # likewise: the split less these
        wanted["exclude_ids"] = text_sha(*sorted(ctx.config.exclude_ids))
    if ctx.config.subset:  # LogicBench's --subset: only that subset resumes here
        wanted["subset"] = ctx.config.subset
    # Refinement solves its repairs with the solve stage's limits, so it answers to those too.
    for stage in [*stages, *(["solve"] if "refine" in stages and "solve" not in stages else [])]:
        wanted["stages"][stage] = stage_identity(ctx, stage)
    folder = ctx.store
    recorded = folder.recorded().get("stages", {})
    # Nothing was refined yet: a run may now add a refinement model.
    unrefined = recorded.get("refine") == {"model": None} and not any(folder.path.glob("refine-*.jsonl"))
    fresh: tuple[str, ...] = ("refine",) if unrefined else ()
    always = ("ids", "exclude_ids", "formalism", "subset")
    then = recorded.get("interpret")
    if "interpret" in stages and then is not None and then != wanted["stages"]["interpret"]:
        # Only the answers' options changed (--backup, --seed): the programs and verdicts stand, and the
        # interpret stage alone is redone. Everything else must match first (the records are kept if not);
        # then its records go before the new options are recorded, so a run stopped in between redoes it.
        try:
            folder.settle({**wanted, "stages": {**wanted["stages"], "interpret": then}}, always, fresh, NOTES)
        except UsageError:
            folder.settle(wanted, always, fresh, NOTES)  # refused again, naming every field that differs
            raise
        for name in ("interpret", "evaluate"):
            folder.stage_path(name).unlink(missing_ok=True)
        fresh += ("interpret",)
    return folder.settle(wanted, always=always, fresh=fresh, notes=NOTES)
