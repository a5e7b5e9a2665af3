"""LogicBench (Eval): 25 inference patterns in propositional, first-order and non-monotonic logic, as
yes/no questions (BQA) and multiple choice (MCQA). Mihir3009/LogicBench at a pinned commit, MIT.

The files are `<BQA|MCQA>/<logic type>/<pattern>/data_instances.json`, read from
$LOGICPIPE_DATASETS/logicbench-eval/ (tests and CI: ../shared/datasets), else downloaded once at the
pinned commit, checked by sha256 and cached, as Logic-LM's files are (source.json, key `logicbench`).

Each BQA sample's qa_pairs are split into one problem per question, id `<logic>/<pattern>/<sample id>/<qa
index>` (the sample id is the file's own, the qa index counts from 0); an MCQA problem is
`<logic>/<pattern>/<sample id>`. A subset (`--subset nm_logic`, `--subset nm_logic/default_reasoning_default`)
is a prefix of those ids: a logic type, or a logic type and a pattern.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from functools import cache
from pathlib import Path

from ..core.errors import DataError, UsageError, did_you_mean
from .fetch import cached_file
from .registry import DatasetSpec, SourceSpec

DATASETS_ENV = "LOGICPIPE_DATASETS"
FOLDER = "logicbench-eval"
LOGIC_TYPES = ("propositional_logic", "first_order_logic", "nm_logic")
_CHOICE = re.compile(r"choice_(\d+)")


@cache
def source() -> SourceSpec:
    raw = json.loads((Path(__file__).parent / "source.json").read_text(encoding="utf-8"))
    return SourceSpec(**raw["logicbench"])


def kind(spec: DatasetSpec) -> str:
    """BQA or MCQA: the task's source folder."""
    return (spec.source.folder or "BQA").upper()


def files(spec: DatasetSpec) -> list[str]:
    """The task's data files, relative to the datasets folder, in the order of the pins."""
    prefix = f"{FOLDER}/{kind(spec)}/"
    return [name for name in source().sha256 if name.startswith(prefix)]


def subsets(spec: DatasetSpec) -> list[str]:
    """Every subset a run may name: each logic type, and each logic type/pattern."""
    patterns = [name.split("/")[2] + "/" + name.split("/")[3] for name in files(spec)]
    types = [t for t in LOGIC_TYPES if any(p.startswith(t + "/") for p in patterns)]
    return types + sorted(patterns)


def check_subset(spec: DatasetSpec, subset: str) -> str:
    """The subset, or UsageError: one line with a did-you-mean and what there is."""
    if spec.source.format != "logicbench":
        raise UsageError(f"--subset: dataset {spec.key} has no subsets (LogicBench's tasks have: a logic type "
                         "or a logic type/pattern)")
    known = subsets(spec)
    wanted = subset.strip().strip("/")
    if wanted not in known:
        raise UsageError(f"--subset: unknown subset '{subset}' of {spec.key}{did_you_mean(wanted, known)}; "
                         f"choose a logic type ({', '.join(t for t in known if '/' not in t)}) or a "
                         "logic type/pattern (`logicpipe list` shows them)")
    return wanted


def in_subset(identifier: str, subset: str) -> bool:
    return identifier.startswith(subset.strip("/") + "/")


def group(identifier: str) -> str | None:
    """`<logic>/<pattern>` of a LogicBench id, None for another id."""
    parts = identifier.split("/")
    return "/".join(parts[:2]) if len(parts) >= 3 else None


def data_file(relative: str) -> Path:
    """A pinned file: from $LOGICPIPE_DATASETS (checked against its sha256), else the download cache."""
    expected = source().sha256.get(relative)
    if expected is None:
        raise DataError(f"{relative} is not one of LogicBench's pinned files")
    root = os.environ.get(DATASETS_ENV)
    if root:
        path = Path(root).expanduser() / relative
        if not path.is_file():
            raise DataError(f"{path} not found (${DATASETS_ENV} is {root}; it should hold {relative})")
        if hashlib.sha256(path.read_bytes()).hexdigest() != expected:
            raise DataError(f"{path} is not LogicBench at commit {source().commit[:12]} (sha256 differs)")
        return path
    return cached_file(relative, source(), hint=f"set {DATASETS_ENV} to a folder holding {FOLDER}/")


def rows(spec: DatasetSpec, split: str) -> tuple[list[dict], str]:
    """The task's rows (one per BQA question, one per MCQA sample) with fields id, context, question,
    options, answer; and a name for them in messages."""
    out: list[dict] = []
    for relative in files(spec):
        path = data_file(relative)
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            samples = raw["samples"]
        except (ValueError, KeyError, TypeError) as exc:
            raise DataError(f"{path}: not a LogicBench file ({exc.__class__.__name__}: {exc})") from None
        logic, pattern = relative.split("/")[2:4]
        for number, sample in enumerate(samples, start=1):
            where = f"{path}: sample {number}"
            if not isinstance(sample, dict) or "context" not in sample:
                raise DataError(f"{where}: no context")
            base = f"{logic}/{pattern}/{sample.get('id', number)}"
            if kind(spec) == "BQA":
                pairs = sample.get("qa_pairs")
                if not isinstance(pairs, list) or not pairs:  # a sample with no question would just vanish
                    raise DataError(f"{where}: no qa_pairs")
                for index, pair in enumerate(pairs):
                    if not isinstance(pair, dict):
                        raise DataError(f"{where}: qa pair {index} is not an object")
                    out.append({"id": f"{base}/{index}", "context": sample["context"],
                                "question": pair.get("question"), "answer": pair.get("answer")})
            else:
                out.append({"id": base, "context": sample["context"], "question": sample.get("question"),
                            **_choices(sample, where)})
    return out, f"LogicBench {kind(spec)} ({split})"


def _choices(sample: dict, where: str) -> dict:
    """Options `A) ...` in the order of the choice numbers, and the answer's letter."""
    choices = sample.get("choices")
    if not isinstance(choices, dict):
        raise DataError(f"{where}: no choices")
    keyed = []
    for key, text in choices.items():
        match = _CHOICE.fullmatch(str(key))
        if match is None:
            raise DataError(f"{where}: choice key {key!r} is not choice_<n>")
        keyed.append((int(match.group(1)), key, str(text)))
    keyed.sort()
    letters = {key: chr(ord("A") + i) for i, (_, key, _) in enumerate(keyed)}
    answer = sample.get("answer")
    return {"options": [f"{letters[key]}) {text}" for _, key, text in keyed],
            "answer": letters.get(str(answer), str(answer))}
