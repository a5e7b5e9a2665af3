"""Mutated programs for every formal language, and a check that each one ends as a typed record that
reads back, within its bound. Used by the fuzz tests and by scripts/fuzz.py.

The seeds are logicpipe's own prompt demonstrations (one per language), never released model output.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

from ..core.jsonl import encode_record
from ..core.records import SolveRecord
from ..prompts import PromptSet
from ..runtime.pool import SolverCall, WorkerPool
from ..stages.solve import solve_record

LANGUAGES = {"lp": "proofwriter", "fol": "folio", "csp": "logicaldeduction", "smt": "ar-lsat"}
# Pieces a mutation may insert: syntax of every language, odd text, and things that once broke parsers.
_PIECES = [
    "(", ")", "[", "]", ",", ":", "::", ":::", ">>>", "&&", "||", "∀x", "∃y", "¬", "→", "↔", "⊕", "∧", "∨",
    "$x", "$y²", "True", "False", "Unknown", "bool", "'q'", '"Multi Word"', "0x" + "f" * 400, "9" * 400,
    "1e308", "-1", "//", "%", "**", "|", "&", "~", "lambda x: x", "__import__('os')", "open('f')",
    "\ud800", "\x00", "é", "\u202e", "Facts:", "Rules:", "Query:", "Premises:", "Conclusion:", "Variables:",
    "Constraints:", "Domain:", "Predicates:", "# Declarations", "# Constraints", "# Options", "------",
    "Problem:", "Answer: True", "EnumSort", "IntSort", "ForAll", "Exists", "Count", "Distinct", "is_valid",
    "is_sat", "AllDifferentConstraint", "range(0, 10)", "\n", "\t", " " * 50,
]


def seeds() -> dict[str, str]:
    """One demonstration program per language, from the shipped prompts."""
    prompts = PromptSet()
    out = {}
    for language, dataset in LANGUAGES.items():
        prompt = prompts.get(dataset)
        text = prompt.system + "\n" + prompt.user
        out[language] = text.split("Program:\n", 1)[1].split("\n\nNow the problem.", 1)[0] + "\n"
    return out


def mutate(text: str, rng: random.Random) -> str:
    """One to four random edits: insert a piece, delete or duplicate a span, swap or repeat lines."""
    for _ in range(rng.randint(1, 4)):
        kind = rng.randrange(6)
        at = rng.randint(0, len(text))
        if kind == 0:
            text = text[:at] + rng.choice(_PIECES) + text[at:]
        elif kind == 1:
            text = text[:at] + text[at + rng.randint(1, 40):]
        elif kind == 2:
            span = text[at:at + rng.randint(1, 60)]
            text = text[:at] + span * rng.randint(2, 30) + text[at:]
        else:
            lines = text.split("\n")
            i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
            if kind == 3:
                lines[i], lines[j] = lines[j], lines[i]
            elif kind == 4:
                lines.insert(i, lines[j] * rng.randint(1, 3))
            else:
                del lines[i]
            text = "\n".join(lines)
    return text


def programs(language: str, count: int, seed: int = 0) -> Iterator[str]:
    rng = random.Random(f"{seed}:{language}")
    base = seeds()[language]
    for _ in range(count):
        yield mutate(base, rng)


@dataclass
class Report:
    language: str
    outcomes: Counter[str] = field(default_factory=Counter)  # verdict, error category, or pool status
    problems: list[str] = field(default_factory=list)  # uncaught exceptions, unreadable records, overruns
    seconds: float = 0.0


def check(language: str, count: int, seed: int = 0, workers: int = 2, timeout: float = 5.0) -> Report:
    """Run `count` mutated programs through the worker pool as a run would, and record every problem."""
    report = Report(language)
    bound = timeout * 1.5 + 5
    texts = dict(enumerate(programs(language, count, seed)))
    tasks = [SolverCall(str(i), {"solver": language, "program": text, "limits": {"seconds": timeout, "memory_mb": 1024}},
                  bound) for i, text in texts.items()]
    start = time.monotonic()
    with WorkerPool("logicpipe.solvers:execute_task", workers, 1024) as pool:
        for outcome in pool.map(tasks):
            record = solve_record(outcome, outcome.key, None, {"dataset": "fuzz", "solver": language, "round": 0})
            report.outcomes[record.verdict or (record.error.category.value if record.error else "?")] += 1
            if outcome.status in ("error", "crashed"):
                report.problems.append(f"program {outcome.key}: {outcome.status}: {outcome.message}")
            if outcome.seconds > bound + 1:
                report.problems.append(f"program {outcome.key}: {outcome.seconds:.1f} s, over its {bound:g} s bound")
            try:
                line = encode_record(record)
                if SolveRecord.model_validate_json(line).id != record.id:
                    raise ValueError("the record read back is another one")
            except Exception as exc:  # noqa: BLE001 - every failure here is a finding to report
                report.problems.append(f"program {outcome.key}: record does not read back: {exc}")
    report.seconds = time.monotonic() - start
    return report
