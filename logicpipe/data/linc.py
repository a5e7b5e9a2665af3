"""LINC's released outputs (github.com/benlipkin/linc), read for a replay: for each neurosymbolic file,
the K raw generations per problem (TEXT:/FOL: programs, read by solvers/nltk_syntax.py), LINC's own
verdict per sample, the gold labels and LINC's accuracy.

The folder is `$LOGICPIPE_LINC` (laid out as LINC's repository), else the pinned files downloaded once
into the cache and checked by sha256 (source.json, key `linc`). The repository states no licence, so
nothing of it ships with logicpipe.

LINC's problems carry no ids. Its FOLIO problems are FOLIO's validation set (Logic-LM's FOLIO dev) less
22, shuffled; each is mapped to its Logic-LM id by text: the conclusion the model copied onto the last
TEXT: line of each sample, matched against the dev questions, premises breaking ties (`folio_ids`). Its
ProofWriter problems are not Logic-LM's, and the files hold no problem text but the model's TEXT: lines,
so they get ids of their own (`LINC_proofwriter_<n>`, n its place in LINC's order).
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from ..core.errors import DataError
from ..core.records import Problem
from .fetch import cached_file
from .registry import SourceSpec

ENV = "LOGICPIPE_LINC"
_NAME = re.compile(r"^(?P<model>.+)_(?P<dataset>[a-z]+)-neurosymbolic-(?P<shots>\d+)shot_generations_raw\.json$")
# LINC's labels, ours.
VERDICTS = {"True": "True", "False": "False", "Uncertain": "Unknown", "Error": None}


@cache
def source() -> SourceSpec:
    raw = json.loads((Path(__file__).parent / "source.json").read_text(encoding="utf-8"))
    return SourceSpec(**raw["linc"])


def linc_root() -> Path:
    """The folder of LINC's files: $LOGICPIPE_LINC, else the pinned download (cached)."""
    folder = os.environ.get(ENV)
    if folder:
        root = Path(folder).expanduser()
        if not (root / "outputs").is_dir():
            raise DataError(f"{ENV}={folder} has no outputs/ folder (a folder laid out as LINC's repository)")
        return root
    pins = source()
    hint = f"set {ENV} to a copy of github.com/{pins.repository} at {pins.commit[:7]}"
    paths = [cached_file(relative, pins, hint) for relative in pins.sha256]
    return paths[0].parents[1]


@dataclass(frozen=True)
class Release:
    """One released neurosymbolic file and its companions."""

    raw: Path
    model: str
    dataset: str  # folio, proofwriter
    shots: int

    @property
    def stem(self) -> str:
        return self.raw.name.removesuffix("_generations_raw.json")

    def companion(self, suffix: str) -> Path:
        return self.raw.with_name(f"{self.stem}_{suffix}")

    def generations(self) -> list[list[str]]:
        return _list_of_lists(self.raw)

    def verdicts(self) -> list[list[str]]:
        return _list_of_lists(self.companion("generations_prc.json"))

    def references(self) -> list[str]:
        refs = _json(self.companion("references.json"))
        if not isinstance(refs, list) or not all(r in VERDICTS for r in refs):
            raise DataError(f"{self.companion('references.json')}: expected a list of True/False/Uncertain")
        return refs

    def accuracy(self) -> float | None:
        """LINC's own majority accuracy for the file (its _results.json), if the file is there."""
        path = self.companion("results.json")
        if not path.is_file():
            return None
        results = _json(path)
        values = results.get(f"{self.dataset}-neurosymbolic-{self.shots}shot", {}) if isinstance(results, dict) else {}
        value = next(iter(values.values()), None) if isinstance(values, dict) else None
        return value if isinstance(value, (int, float)) else None


def releases(root: Path) -> list[Release]:
    """Every neurosymbolic file whose raw generations, verdicts and references are in the folder."""
    found = []
    for path in sorted((root / "outputs").glob("*_generations_raw.json")):
        match = _NAME.match(path.name)
        if match is None:
            continue
        release = Release(path, match["model"], match["dataset"], int(match["shots"]))
        if release.companion("generations_prc.json").is_file() and release.companion("references.json").is_file():
            found.append(release)
    if not found:
        raise DataError(f"no neurosymbolic generations (outputs/*_generations_raw.json) in {root}")
    return found


def _json(path: Path) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"{path}: cannot be read as JSON ({exc})") from None


def _list_of_lists(path: Path) -> list[list[str]]:
    value = _json(path)
    if not isinstance(value, list) or not all(isinstance(v, list) and all(isinstance(s, str) for s in v)
                                              for v in value):
        raise DataError(f"{path}: expected a list (one per problem) of lists of strings (one per sample)")
    return value  # type: ignore[return-value]


def texts(generation: str) -> list[str]:
    """The TEXT: lines of a generation (the model's copy of each premise, then of the conclusion)."""
    return [line.split("TEXT:", 1)[1].strip() for line in generation.split("</EVALUATE>")[0].split("\n")
            if "TEXT:" in line]


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def folio_ids(generations: list[list[str]], dev: list[Problem]) -> list[str]:
    """The Logic-LM FOLIO dev id of each LINC problem: the dev problem whose conclusion most samples
    copied (exactly, up to case and punctuation) onto their last TEXT: line, then the one sharing most
    premise lines; DataError unless every problem finds one and no two find the same."""
    by_conclusion: dict[str, list[Problem]] = {}
    for problem in dev:
        conclusion = problem.question.split("?", 1)[-1]
        by_conclusion.setdefault(_norm(conclusion), []).append(problem)
    ids: list[str] = []
    for index, samples in enumerate(generations):
        copied = [texts(sample) for sample in samples]
        votes = Counter(_norm(lines[-1]) for lines in copied if lines)
        candidates = [p for conclusion, _ in votes.most_common() for p in by_conclusion.get(conclusion, [])]
        if not candidates:
            raise DataError(f"LINC's FOLIO problem {index}: no FOLIO dev question has the conclusion its samples copy")
        premises = Counter(_norm(line) for lines in copied for line in lines[:-1])
        ids.append(max(candidates, key=lambda problem: _shared(premises, problem)).id)
    repeated = [identifier for identifier, count in Counter(ids).items() if count > 1]
    if repeated:
        raise DataError(f"two of LINC's FOLIO problems map to the same FOLIO dev problem {repeated[0]}")
    return ids


def _shared(premises: Counter[str], problem: Problem) -> int:
    """How many of the samples' premise lines occur in the problem's context."""
    context = _norm(problem.context)
    return sum(count for line, count in premises.items() if line and line in context)


def proofwriter_problems(generations: list[list[str]], references: list[str]) -> list[dict]:
    """LINC's ProofWriter problems as rows of a task file: the premises and conclusion as the first
    sample with TEXT: lines copied them (the files hold no other problem text), the gold from LINC."""
    rows = []
    for index, (samples, reference) in enumerate(zip(generations, references)):
        lines = next((found for found in map(texts, samples) if len(found) > 1), ["", ""])
        rows.append({"id": f"LINC_proofwriter_{index}", "premises": lines[:-1], "conclusion": lines[-1],
                     "label": VERDICTS[reference] or "Unknown"})
    return rows
