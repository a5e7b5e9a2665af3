"""A dataset's own first-order annotations as programs: `--programs gold`.

FOLIO v0.0 (Yale-LILY/FOLIO at a pinned commit, CC BY-SA 4.0) annotates each validation example's
premises and conclusion in FOL, in the notation of Logic-LM's FOL prompt; its validation set is
Logic-LM's FOLIO dev set. The converter below writes each example's annotations into logicpipe's FOL
program syntax (`Predicates:`, `Premises:`, `Conclusion:`, each formula `::: its sentence`) and keeps
every formula as annotated: whether it parses is the FOL solver's to say, so an annotation that does not
parse is that problem's typed parse error in the solve stage (and `gold_audit` names which annotation),
never a dropped problem. The programs are a JSONL file in the cache (`--programs` reads it as a file a
person wrote), written once per annotation file (by sha256) and converter version.

The annotation files are read from $LOGICPIPE_DATASETS/folio-v0.0/ (tests and CI: ../shared/datasets),
else downloaded once at the pinned commit, checked by sha256 and cached, as Logic-LM's files are.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import DataError, ProgramParseError
from ..solvers.fol_parser import Bin, Eq, Func, Not, Pred, Quant, parse_formula
from .fetch import cache_dir, cached_file
from .registry import DatasetSpec, SourceSpec

DATASETS_ENV = "LOGICPIPE_DATASETS"
GOLD = "gold"  # `--programs gold`
# Bumped whenever the converter's output changes, so a cached programs file is never stale.
CONVERTER_VERSION = 1

FOLIO_SOURCE = SourceSpec(
    repository="Yale-LILY/FOLIO",
    commit="5d7bb84c7edab3fb358e057d2807f19cf5cf5e2d",
    base_url="https://raw.githubusercontent.com/Yale-LILY/FOLIO/5d7bb84c7edab3fb358e057d2807f19cf5cf5e2d",
    remote_paths={"folio-v0.0/": "data/v0.0/"},
    sha256={
        "folio-v0.0/folio-validation.jsonl": "6922c988ef10987bd6545568ee8e63e897af80994591fa20539767da58f8e3d1",
        "folio-v0.0/folio-train.jsonl": "008d34b750d31fa7f014e953228adf4db81ec34bbda9e7f67c96c60438d1e6b2",
    },
)
# Logic-LM's split -> FOLIO v0.0's annotation file. Train is not here: FOLIO v0.0's train file
# annotates the premises only (no conclusion-FOL), so it has no program to replay.
_FOLIO_FILES = {"dev": "folio-v0.0/folio-validation.jsonl"}
GOLD_SPLITS = tuple(_FOLIO_FILES)
# Logic-LM's FOLIO question: this prefix, then the conclusion's sentence.
_QUESTION = "Based on the above information, is the following statement true, false, or uncertain? "


def has_gold(spec: DatasetSpec) -> bool:
    """Whether the task is Logic-LM's FOLIO, whose problems have FOLIO v0.0's annotations."""
    return spec.source.format == "logic-lm" and (spec.source.folder or "").upper() == "FOLIO"


def is_gold(value: Path | str | None) -> bool:
    return value is not None and str(value) == GOLD


def annotation_file(relative: str, download: bool = True) -> Path:
    """FOLIO v0.0's file: from $LOGICPIPE_DATASETS (checked against the pinned sha256), else the cache
    (downloaded into it when `download`; else a DataError when it is not there yet)."""
    root = os.environ.get(DATASETS_ENV)
    if root:
        path = Path(root).expanduser() / relative
        if not path.is_file():
            raise DataError(f"{path} not found (${DATASETS_ENV} is {root}; it should hold {relative})")
        if hashlib.sha256(path.read_bytes()).hexdigest() != FOLIO_SOURCE.sha256[relative]:
            raise DataError(f"{path} is not FOLIO v0.0 at commit {FOLIO_SOURCE.commit[:12]} (sha256 differs)")
        return path
    if not download:
        cached = cache_dir() / "logic-lm" / FOLIO_SOURCE.commit / relative  # where cached_file keeps it
        if not (cached.is_file() and hashlib.sha256(cached.read_bytes()).hexdigest() == FOLIO_SOURCE.sha256[relative]):
            raise DataError(f"FOLIO v0.0's {relative} is not here: set {DATASETS_ENV}, or run `logicpipe audit -d "
                            "folio` once to download it")
    return cached_file(relative, FOLIO_SOURCE, hint=f"set {DATASETS_ENV} to a folder holding {relative}")


@dataclass
class Annotated:
    """One FOLIO example: its sentences and their annotations."""

    premises: list[str]
    formulas: list[str]
    conclusion: str
    conclusion_formula: str
    label: str


def _rows(path: Path) -> list[Annotated]:
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            rows.append(Annotated([str(p) for p in row["premises"]], [str(f) for f in row["premises-FOL"]],
                                  str(row["conclusion"]), str(row.get("conclusion-FOL") or ""), str(row["label"])))
        except (ValueError, KeyError, TypeError) as exc:
            raise DataError(f"{path}:{number}: not a FOLIO example ({exc})") from None
    return rows


def _one_line(text: str) -> str:
    """A formula or sentence on one line (the program is read line by line)."""
    return " ".join(text.split())


def _predicates(formulas: list[str]) -> list[str]:
    """`Name(x, y)` for each predicate the formulas that parse use, in order of first use."""
    seen: dict[tuple[str, int], None] = {}
    for formula in formulas:
        try:
            stack: list[Any] = [parse_formula(formula)]
        except ProgramParseError:
            continue
        while stack:
            node = stack.pop(0)
            if isinstance(node, Pred):
                seen.setdefault((node.name, len(node.args)), None)
            elif isinstance(node, (Not, Quant)):
                stack.insert(0, node.body)
            elif isinstance(node, Bin):
                stack[0:0] = [node.left, node.right]
            elif isinstance(node, (Eq, Func)):
                continue
    letters = "xyzuvw"
    return [f"{name}({', '.join(letters[i % 6] + (str(i // 6) if i >= 6 else '') for i in range(arity))})"
            if arity else name for name, arity in seen]


def folio_program(example: Annotated) -> str:
    """The example's annotations as a program of Logic-LM's FOL syntax; every formula kept as written
    (on one line), each followed by its sentence when the counts of sentences and formulas agree."""
    formulas = [_one_line(f) for f in example.formulas]
    sentences = [_one_line(s) for s in example.premises] if len(example.premises) == len(formulas) else []
    conclusion = _one_line(example.conclusion_formula)
    lines = ["Predicates:", *_predicates([*formulas, conclusion]), "Premises:"]
    lines += [f"{f} ::: {sentences[i]}" if sentences else f for i, f in enumerate(formulas)]
    lines += ["Conclusion:", f"{conclusion} ::: {_one_line(example.conclusion)}" if conclusion else ""]
    return "\n".join(lines) + "\n"


def _question_conclusion(question: str) -> str:
    return _one_line(question[len(_QUESTION):] if question.startswith(_QUESTION) else question)


def gold_examples(spec: DatasetSpec, split: str, data_dir: Path | str | None = None,
                  download: bool = True) -> dict[str, Annotated]:
    """Problem id -> its FOLIO v0.0 example, matched by the conclusion's sentence (each dev question
    names one validation conclusion); a DataError when the split has no annotations."""
    from .loaders import load_problems

    if not has_gold(spec):
        raise DataError(f"{spec.key} has no gold programs: --programs gold replays FOLIO's own annotations "
                        "(-d folio --split dev)")
    relative = _FOLIO_FILES.get(split)
    if relative is None:
        raise DataError(f"{spec.key}/{split} has no gold programs: FOLIO v0.0's {split} file annotates the "
                        "premises but not the conclusions; gold programs exist for the dev split")
    by_conclusion = {_one_line(row.conclusion): row for row in _rows(annotation_file(relative, download))}
    found = {}
    for problem in load_problems(spec, split, data_dir):
        row = by_conclusion.get(_question_conclusion(problem.question))
        if row is not None:
            found[problem.id] = row
    return found


def gold_programs(spec: DatasetSpec, split: str, data_dir: Path | str | None = None,
                  download: bool = True) -> Path:
    """The split's gold programs as a JSONL file of {"id", "program"} (written once, then reused)."""
    examples = gold_examples(spec, split, data_dir, download)
    lines = "".join(json.dumps({"id": identifier, "program": folio_program(example)}, ensure_ascii=False) + "\n"
                    for identifier, example in examples.items())
    digest = hashlib.sha256(f"{CONVERTER_VERSION}\n{lines}".encode()).hexdigest()[:16]
    target = cache_dir() / "gold" / digest / f"{spec.key}-{split}.gold.jsonl"
    if not target.is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        part = target.with_suffix(f".{os.getpid()}.part")
        part.write_text(lines, encoding="utf-8")
        os.replace(part, target)
    return target


def annotation_errors(example: Annotated) -> list[str]:
    """Each annotation of the example that the FOL parser refuses, named, with the parser's reason."""
    problems = []
    named = [(f"premise {i + 1}", f) for i, f in enumerate(example.formulas)]
    for name, formula in [*named, ("conclusion", example.conclusion_formula)]:
        if not formula.strip():
            problems.append(f"{name}: no annotation")
            continue
        try:
            parse_formula(_one_line(formula))
        except ProgramParseError as exc:
            where = f" at column {exc.column}" if exc.column is not None else ""
            problems.append(f"{name} {_one_line(formula)!r}: {exc.reason}{where}")
    return problems

