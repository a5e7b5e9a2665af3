"""A dataset's gold programs as a reference: the audit of the annotations themselves, and a run's
agreement with them.

`audit` reads a replay of the gold programs (`logicpipe audit` runs it into OUT/gold/<task>/) and lists
each problem whose gold program does not parse (naming the annotation and the parser's reason), runs but
proves another label, or has inconsistent premises, or does not execute for another reason.

`agreement` holds a run's verdicts against the gold programs' verdicts, problem by problem. The gold
verdicts are the FOL solver's on the gold programs, computed here (a few seconds for FOLIO's dev set) and
cached by the programs file and the solver's limits. Agreement compares the option each side's program
proved; it says nothing about whether the two programs state the same premises.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import LogicPipeError
from ..core.records import stage_error
from ..data.fetch import cache_dir
from ..data.gold import GOLD_SPLITS, Annotated, annotation_errors, gold_examples, gold_programs, has_gold
from ..data.registry import DatasetSpec
from ..solvers import get_solver
from ..solvers.base import Limits, map_answer
from ..solvers.fol import FOLProgram
from ..solvers.fol_parser import Bin, Not, Pred, Quant, parse_formula

if TYPE_CHECKING:
    from ..stages.config import RunConfig

AGREEMENT_FILE = "gold_agreement.jsonl"
AUDIT_FILE = "audit.jsonl"


def _last_records(path: Path) -> dict[str, dict]:
    """id -> the last record of that id in a stage file (a resumed run appends)."""
    found: dict[str, dict] = {}
    if not path.is_file():
        return found
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                record = json.loads(line)
                found[record["id"]] = record
    return found


@dataclass
class Flagged:
    id: str
    kind: str  # does_not_parse | other_label | inconsistent | does_not_execute | no_answer
    label: str | None  # the dataset's answer
    proved: str | None  # the option the gold program proved
    reason: str


def audit(run_dir: Path, spec: DatasetSpec, split: str,
          data_dir: Path | str | None = None) -> tuple[list[Flagged], int]:
    """The problems of a gold replay (run_dir) whose gold program cannot be trusted, in the run's order,
    and how many problems the replay holds."""
    examples = gold_examples(spec, split, data_dir)
    solved = _last_records(run_dir / "solve.jsonl")
    evaluated = _last_records(run_dir / "evaluate.jsonl")
    flagged = []
    for identifier, record in evaluated.items():
        error = record.get("error") or {}
        category = error.get("category")
        if category == "parse":
            named = annotation_errors(examples[identifier]) if identifier in examples else []
            flagged.append(Flagged(identifier, "does_not_parse", record["gold"], None,
                                   "; ".join(named) or error.get("message", "")))
        elif record["executed"] and record["predicted"] is not None and record["predicted"] != record["gold"]:
            verdict = (solved.get(identifier) or {}).get("verdict")
            flagged.append(Flagged(identifier, "other_label", record["gold"], record["predicted"],
                                   f"the gold program proves {verdict} ({record['predicted']}); the label is "
                                   f"{record['gold']}"))
        elif "inconsistent" in str(error.get("message", "")) or _inconsistent(solved.get(identifier)):
            flagged.append(Flagged(identifier, "inconsistent", record["gold"], None,
                                   "the gold premises contradict each other: every option would follow"))
        elif not record["executed"]:
            flagged.append(Flagged(identifier, "does_not_execute", record["gold"], None,
                                   f"{category}: {error.get('message', '')}"))
        elif record["predicted"] is None:
            flagged.append(Flagged(identifier, "no_answer", record["gold"], None,
                                   f"{category}: {error.get('message', '')}"))
    return flagged, len(evaluated)


def _inconsistent(solve: dict | None) -> bool:
    if not solve or solve.get("verdict") is not None:
        return False
    return "inconsistent" in json.dumps(solve.get("error") or {}) or "inconsistent" in json.dumps(
        solve.get("explanation") or {})


def write_audit(run_dir: Path, flagged: list[Flagged]) -> Path:
    path = run_dir / AUDIT_FILE
    part = path.with_suffix(f".{os.getpid()}.part")
    part.write_text("".join(json.dumps(asdict(f), ensure_ascii=False) + "\n" for f in flagged), encoding="utf-8")
    os.replace(part, path)
    return path


@dataclass
class GoldVerdict:
    letter: str | None  # the option the gold program proved, None when it proved none
    error: str | None  # why not: the error's category (parse, timeout, ...) or no_answer


def gold_verdicts(spec: DatasetSpec, split: str, data_dir: Path | str | None, ids: list[str], seconds: float,
                  memory_mb: int, workers: int) -> dict[str, GoldVerdict]:
    """The option the gold program of each of `ids` proves (ids without one are left out), solved once:
    the verdicts are cached by the programs file and the solver's limits, and only ids not yet solved run."""
    from ..data.loaders import load_problems

    path = gold_programs(spec, split, data_dir, download=False)  # a run's metrics never wait on a download
    texts = {r["id"]: r["program"] for r in map(json.loads, path.read_text(encoding="utf-8").splitlines())}
    key = hashlib.sha256(f"{path.name}|{path.parent.name}|{seconds}|{memory_mb}|{spec.closed_world}".encode())
    cached = cache_dir() / "gold" / f"verdicts-{key.hexdigest()[:16]}.json"
    found: dict[str, GoldVerdict] = {}
    if cached.is_file():
        found = {k: GoldVerdict(**v) for k, v in json.loads(cached.read_text(encoding="utf-8")).items()}
    todo = [i for i in dict.fromkeys(ids) if i in texts and i not in found]
    if todo:
        options = {p.id: p.options for p in load_problems(spec, split, data_dir)}
        solver = get_solver("fol")  # gold programs are FOL, whatever formalism the run used

        def solve(identifier: str) -> tuple[str, GoldVerdict]:
            try:
                result = solver.execute(solver.parse(texts[identifier]), Limits(seconds, memory_mb))
            except LogicPipeError as exc:
                return identifier, GoldVerdict(None, stage_error(exc).category.value)
            letter = map_answer(result.verdict, options[identifier], spec.closed_world)
            return identifier, GoldVerdict(letter, None if letter else "no_answer")

        with ThreadPoolExecutor(max(1, workers)) as pool:
            found.update(pool.map(solve, todo))
        cached.parent.mkdir(parents=True, exist_ok=True)
        part = cached.with_suffix(f".{os.getpid()}.part")
        part.write_text(json.dumps({k: asdict(v) for k, v in found.items()}), encoding="utf-8")
        os.replace(part, cached)
    return {i: found[i] for i in ids if i in found}


def _signatures(node: Any) -> set[tuple[str, int]]:
    """Each predicate (name, arity) a formula uses."""
    found: set[tuple[str, int]] = set()
    stack = [node]
    while stack:
        node = stack.pop()
        if isinstance(node, Pred):
            found.add((node.name, len(node.args)))
        elif isinstance(node, (Not, Quant)):
            stack.append(node.body)
        elif isinstance(node, Bin):
            stack += [node.left, node.right]
    return found


@dataclass
class PremisesCheck:
    verdict: str | None = None
    gives_label: bool | None = None
    unchecked: str | None = None


def premises_checks(run_dir: Path, examples: dict[str, Annotated], labels: dict[str, str | None],
                    options: dict[str, list[str]], closed_world: bool, seconds: float, memory_mb: int,
                    workers: int) -> dict[str, PremisesCheck]:
    """Per problem of the run: Prover9 on the run's final premises with the gold conclusion, where every
    predicate of the gold conclusion (name and arity) is one the run's premises use; the option proved,
    and whether it is the label. A translation that gets the right letter from premises that do not say
    what the gold ones say shows here: its premises do not give the label for the gold conclusion."""
    from ..stages.store import read_recorded
    from .export import final_program

    solver = get_solver("fol")
    found: dict[str, PremisesCheck] = {}
    todo: list[tuple[str, FOLProgram]] = []
    for trajectory in read_recorded(run_dir, []).trajectories:
        identifier = trajectory.id
        final = final_program(trajectory)
        example = examples.get(identifier)
        if example is None:
            found[identifier] = PremisesCheck(unchecked="no gold annotation")
            continue
        if final is None or final.program is None:
            found[identifier] = PremisesCheck(unchecked="the run has no program")
            continue
        try:
            mine = solver.parse(final.program)
        except LogicPipeError:
            found[identifier] = PremisesCheck(unchecked="the run's program does not parse")
            continue
        try:
            conclusion = parse_formula(" ".join(example.conclusion_formula.split()))
        except LogicPipeError:
            found[identifier] = PremisesCheck(unchecked="the gold conclusion does not parse")
            continue
        used = set().union(*(_signatures(formula) for formula, _ in mine.premises))
        missing = sorted(_signatures(conclusion) - used)
        if missing:
            found[identifier] = PremisesCheck(unchecked="names differ: the run's premises have no " + ", ".join(
                f"{name}/{arity}" for name, arity in missing))
            continue
        todo.append((identifier, FOLProgram(premises=mine.premises, conclusion=(conclusion, example.conclusion))))

    def check(item: tuple[str, FOLProgram]) -> tuple[str, PremisesCheck]:
        identifier, program = item
        try:
            result = solver.execute(program, Limits(seconds, memory_mb))
        except LogicPipeError as exc:
            return identifier, PremisesCheck(unchecked=f"Prover9: {stage_error(exc).category.value}")
        letter = map_answer(result.verdict, options.get(identifier, []), closed_world)
        if letter is None:
            return identifier, PremisesCheck(unchecked=result.no_answer or "no option proved")
        return identifier, PremisesCheck(letter, letter == labels.get(identifier))

    with ThreadPoolExecutor(max(1, workers)) as pool:
        found.update(pool.map(check, todo))
    return found


def reference(config: RunConfig, run_dir: Path) -> dict | None:
    """metrics.json's `gold_agreement` for a run on a task with gold programs (None for other tasks and
    for a replay of the gold programs themselves); gold_agreement.jsonl holds the per-problem rows. Gold
    programs that cannot be had (no annotation files, no network) are said in the figures, not raised."""
    spec = config.spec
    if not has_gold(spec) or config.split not in GOLD_SPLITS:
        return None
    try:
        if config.programs is not None and config.programs == gold_programs(spec, config.split, config.data_dir,
                                                                                download=False):
            return None
        evaluated = run_dir / "evaluate.jsonl"
        ids = list(_last_records(evaluated))
        gold = gold_verdicts(spec, config.split, config.data_dir, ids, config.timeout or spec.timeout,
                             config.memory_mb, config.workers)
    except (LogicPipeError, OSError) as exc:
        return {"error": f"no gold verdicts: {exc}"}
    rows = list(agreement(evaluated, gold))
    failed: str | None = None
    try:
        from ..data.loaders import load_problems

        problems = {p.id: p for p in load_problems(spec, config.split, config.data_dir)}
        checks = premises_checks(run_dir, gold_examples(spec, config.split, config.data_dir, download=False),
                                 {i: p.answer for i, p in problems.items()}, {i: p.options for i, p in problems.items()},
                                 spec.closed_world, config.timeout or spec.timeout, config.memory_mb, config.workers)
    except (LogicPipeError, OSError) as exc:
        checks, failed = {}, f"no premises check: {exc}"
    for row in rows:
        check = checks.get(row.id, PremisesCheck(unchecked=failed or "no records"))
        row.premises_verdict, row.premises_give_label, row.premises_unchecked = \
            check.verdict, check.gives_label, check.unchecked
    write_agreement(run_dir, rows)
    return summary(rows, _last_records(evaluated))


@dataclass
class Agreement:
    id: str
    verdict: str | None  # the option the run's program proved (None: it proved none)
    gold_verdict: str | None  # the option the gold program proved
    agrees: bool | None  # None when either proved none: nothing to compare
    gold_error: str | None = None
    # The run's premises with the gold conclusion (Prover9): the option they prove, whether it is the
    # label, or why they were not checked (the run's program does not parse, the names differ, ...).
    premises_verdict: str | None = None
    premises_give_label: bool | None = None
    premises_unchecked: str | None = None


def agreement(evaluated: Path, gold: dict[str, GoldVerdict]) -> Iterator[Agreement]:
    """Per problem of the run (its evaluate.jsonl), the run's verdict beside the gold program's."""
    for identifier, record in _last_records(evaluated).items():
        mine = record["predicted"] if record["executed"] else None
        reference = gold.get(identifier)
        theirs = reference.letter if reference else None
        yield Agreement(identifier, mine, theirs,
                        None if mine is None or theirs is None else mine == theirs,
                        reference.error if reference else "no_gold_program")


def summary(rows: list[Agreement], evaluated: dict[str, dict] | None = None) -> dict:
    """metrics.json's `gold_agreement`: agreement among problems where both programs proved an option,
    and the premises check: among problems whose premises could be checked against the gold conclusion,
    how many give the label, and how many answered right from premises that do not."""
    compared = [r for r in rows if r.agrees is not None]
    agree = sum(1 for r in compared if r.agrees)
    checked = [r for r in rows if r.premises_give_label is not None]
    give = sum(1 for r in checked if r.premises_give_label)
    right = {pid for pid, r in (evaluated or {}).items() if r.get("correct_executed")}
    return {"problems": len(rows), "compared": len(compared), "agree": agree,
            "rate": round(100.0 * agree / len(compared), 2) if compared else None,  # None: undefined
            "run_no_verdict": sum(1 for r in rows if r.verdict is None),
            "gold_no_verdict": dict(sorted(Counter(r.gold_error or "no_answer" for r in rows
                                                   if r.gold_verdict is None).items())),
            "premises": {"checked": len(checked), "give_label": give,
                         "rate": round(100.0 * give / len(checked), 2) if checked else None,
                         "right_answer_other_premises": sum(1 for r in checked
                                                            if not r.premises_give_label and r.id in right),
                         "unchecked": dict(sorted(Counter(_kind(r.premises_unchecked) for r in rows
                                                          if r.premises_give_label is None).items()))}}


def _kind(reason: str | None) -> str:
    """An unchecked reason without its particulars (the names that differ), to count."""
    return (reason or "no option proved").split(":")[0]


def write_agreement(run_dir: Path, rows: list[Agreement]) -> Path:
    path = run_dir / AGREEMENT_FILE
    text = "".join(json.dumps(asdict(r), ensure_ascii=False) + "\n" for r in rows)
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        part = path.with_suffix(f".{os.getpid()}.part")
        part.write_text(text, encoding="utf-8")
        os.replace(part, path)
    return path
