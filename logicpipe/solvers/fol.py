"""First-order logic for FOLIO with Prover9.

Program: `Predicates:` (declarations), `Premises:`, `Conclusion:`, each formula optionally followed by
`::: text`. Verdict as in Logic-LM: conclusion proved -> True, negation proved -> False, else Unknown;
unlike Logic-LM, a prover that runs out of time is a timeout, not Unknown, and premises that contradict
each other give no answer instead of proving every option. First a small finite world is sought where
the premises hold and the conclusion (or its negation) fails (fol_worlds): one shows that target
unprovable and the premises consistent. Then Prover9's searches that are still needed (conclusion,
negation, and without a world a contradiction from the premises alone) run side by side.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import ProgramExecutionError, ProgramParseError, SolverTimeout
from .base import Limits, SolverResult
from .fol_parser import RULES, Bin, Const, Eq, Func, Not, Pred, Quant, Var, parse_formula
from .fol_worlds import FOUND, counter_worlds
from .nltk_syntax import is_linc_program, linc_program
from .prover9 import Search, Searches, error_message, prover9_path
from .sections import walk_sections

SECTIONS = ("Predicates", "Premises", "Conclusion")
# Far above any real FOLIO program (a few KB); keeps a runaway generation from tying up a worker.
MAX_PROGRAM_CHARS = 200_000
# A Logic-LM section heading; a program with none but with `FOL:` lines is in LINC's syntax (nltk_syntax).
_SECTION_LINE = re.compile(r"^\s*(Predicates|Premises|Conclusions?)\s*:", re.M | re.I)
# A target with a counter-model, or whose Prover9 search ran out of clauses having dropped none (else it
# is "incomplete", prover9.py), is unprovable; either also shows the premises consistent.
COUNTER_MODEL = "counter-model"
UNPROVABLE = {COUNTER_MODEL, "exhausted"}
# The world search's grounding bound inside a solver call (fol_worlds.MAX_GROUND is for offline checks).
WORLD_GROUND = 50_000


@dataclass
class FOLProgram:
    premises: list[tuple[Any, str]] = field(default_factory=list)
    conclusion: tuple[Any, str] | None = None
    notes: list[str] = field(default_factory=list)
    # Each leniency (fol_parser.RULES) the program needed -> (line, column) where it was first needed.
    lenient: dict[str, tuple[int | None, int | None]] = field(default_factory=dict)

    def formula(self, code: str, number: int | None) -> Any:
        rules: dict[str, int] = {}
        node = parse_formula(code, number, rules)
        for rule, column in rules.items():
            self.lenient.setdefault(rule, (number, column))
        return node
    # What proves the conclusion false when that is not simply its negation (LINC's syntax: nltk_syntax).
    negation: Any = None


def _spell(name: str) -> str:
    """An injective ASCII spelling: letters and digits stay, '_' doubles, any other character becomes
    _<hex>_, so `a'b`, `a_27_b` and `beyoncé` get three different Prover9 symbols."""
    return "".join(c if c.isascii() and c.isalnum() else "__" if c == "_" else f"_{ord(c):x}_" for c in name)


class _Names:
    """Prover9 spellings for the program's symbols: prefixes keep constants from being read as
    variables (Prover9 treats free names starting u-z as variables) and keep kinds apart."""

    def __init__(self) -> None:
        self.back: dict[str, str] = {}

    def __call__(self, prefix: str, name: str, arity: int | None = None) -> str:
        token = f"{prefix}_{_spell(name)}" + (f"_{arity}" if arity else "")
        self.back[token] = name
        return token


def to_prover9(node: Any, names: _Names) -> str:
    if isinstance(node, Pred):
        head = names("p", node.name, len(node.args))
        return head if not node.args else f"{head}({', '.join(_term(a, names) for a in node.args)})"
    if isinstance(node, Eq):
        return f"({_term(node.left, names)} = {_term(node.right, names)})"
    if isinstance(node, Not):
        return f"-({to_prover9(node.body, names)})"
    if isinstance(node, Quant):
        return f"({node.kind} {names('v', node.var)} ({to_prover9(node.body, names)}))"
    if isinstance(node, Bin):
        left, right = to_prover9(node.left, names), to_prover9(node.right, names)
        if node.op == "xor":
            return f"-(({left}) <-> ({right}))"
        symbol = {"and": "&", "or": "|", "imp": "->", "iff": "<->"}[node.op]
        return f"(({left}) {symbol} ({right}))"
    raise TypeError(node)


def _term(node: Any, names: _Names) -> str:
    if isinstance(node, Var):
        return names("v", node.name)
    if isinstance(node, Const):
        return names("c", node.name)
    if isinstance(node, Func):
        return f"{names('f', node.name, len(node.args))}({', '.join(_term(a, names) for a in node.args)})"
    raise TypeError(node)


class FOLSolver:
    name = "fol"
    formalism = "first-order logic (Prover9)"
    rules = RULES

    def check(self) -> None:
        prover9_path()

    def parse(self, text: str) -> FOLProgram:
        if len(text) > MAX_PROGRAM_CHARS:
            raise ProgramParseError(f"program is {len(text)} characters long; the limit is {MAX_PROGRAM_CHARS}")
        program = FOLProgram()
        if is_linc_program(text) and not _SECTION_LINE.search(text):
            linc = linc_program(text)
            program.premises, program.conclusion, program.negation = linc.premises, linc.conclusion, linc.negation
            return program
        after: list[str] = []
        for line in walk_sections(text, SECTIONS, aliases={"Conclusions": "Conclusion"}, notes=program.notes):
            if line.section == "Predicates":
                continue
            if line.section == "Premises":
                program.premises.append((program.formula(line.code, line.number), line.comment or line.code))
            elif program.conclusion is None:
                program.conclusion = (program.formula(line.code, line.number), line.comment or line.code)
            else:
                # Prose after the one conclusion ("Answer: True", a justification) is not part of it.
                after.append(line.raw.strip())
                program.lenient.setdefault("text-after-conclusion", (line.number, None))
        if program.conclusion is None:
            raise ProgramParseError("missing 'Conclusion:' section or conclusion")
        if not program.premises:
            raise ProgramParseError("missing 'Premises:' section or premises")
        if after:
            shown = ", ".join(repr(_clip(raw)) for raw in after[:3]) + (", ..." if len(after) > 3 else "")
            program.notes.append(f"ignored {len(after)} line{'s' if len(after) > 1 else ''} after the conclusion: "
                                 f"{shown}")
        return program

    def execute(self, program: FOLProgram, limits: Limits) -> SolverResult:
        assert program.conclusion is not None
        names = _Names()
        premises = [formula for formula, _ in program.premises]
        targets = {"conclusion": program.conclusion[0],
                   "negation": Not(program.conclusion[0]) if program.negation is None else program.negation}
        seconds = max(1, int(limits.seconds / 2))
        # A small world where the premises hold and a target fails shows at once what Prover9 shows only by
        # exhausting its search, often not within the limit: that the target is unprovable, and that the
        # premises are consistent, so a proof of the other target is the answer.
        worlds = counter_worlds(premises, targets, limits.seconds / 4, max_ground=WORLD_GROUND)
        status = {label: COUNTER_MODEL for label, found in worlds.items() if found == FOUND}
        outcome = _decide(status, complete=False)  # worlds alone settle Unknown only
        found: dict[str, Search] = {}
        if outcome is None:
            assumptions = [to_prover9(formula, names) for formula in premises]
            megs = max(50, limits.memory_mb // 4)  # up to three searches share the worker's memory
            inputs = {label: _input(assumptions, to_prover9(target, names), seconds, megs)
                      for label, target in targets.items() if label not in status}
            if not status:  # no world found: a contradiction from the premises alone is still possible
                inputs["contradiction"] = _input(assumptions, None, seconds, megs)
            with Searches(inputs, seconds) as searches:
                for search in searches:
                    if search.status == "error":
                        raise ProgramExecutionError(f"Prover9 rejected the input: {error_message(search)}")
                    found[search.label] = search
                    status[search.label] = search.status
                    outcome = _decide(status, len(found) == len(inputs))
                    if outcome is not None:
                        break
        assert outcome is not None
        result = _result(outcome, status, found, names, seconds)
        if program.notes:
            result.explanation = {**(result.explanation or {}), "ignored": program.notes}
        return result


def _clip(text: str, width: int = 80) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."


def _input(premises: list[str], goal: str | None, seconds: int, megs: int) -> str:
    # Without a goal Prover9 looks for a contradiction among the assumptions alone.
    goals = f"formulas(goals).\n{goal}.\nend_of_list.\n" if goal is not None else ""
    return (f"assign(max_seconds, {seconds}).\nassign(max_megs, {megs}).\nclear(auto_denials).\n"
            "clear(print_initial_clauses).\nclear(print_given).\n"
            "formulas(assumptions).\n" + "".join(f"{p}.\n" for p in premises) + "end_of_list.\n" + goals)


def _decide(status: dict[str, str], complete: bool) -> str | None:
    """The outcome once the searches finished so far settle it, else None. A proof of the conclusion
    (or its negation) counts only once the premises are known to be consistent, which a counter-model or
    an exhausted search shows; waiting for that keeps the outcome independent of which search finishes
    first."""
    if status.get("contradiction") == "proved":
        return "inconsistent"
    consistent = bool(UNPROVABLE & set(status.values()))
    for label, verdict in (("conclusion", "True"), ("negation", "False")):
        if status.get(label) == "proved" and consistent:
            return verdict
    if status.get("conclusion") in UNPROVABLE and status.get("negation") in UNPROVABLE:
        return "Unknown"
    if not complete:
        return None
    if status["conclusion"] == status["negation"] == "proved":
        return "inconsistent"
    for label, verdict in (("conclusion", "True"), ("negation", "False")):
        if status[label] == "proved":
            return verdict  # the consistency searches hit their limit: Logic-LM's reading, noted
    return "timeout"


def _result(outcome: str, status: dict[str, str], found: dict[str, Search], names: _Names,
            seconds: int) -> SolverResult:
    if outcome == "timeout":
        raise SolverTimeout(f"Prover9 did not decide within its {seconds} s limit and its clause limits "
                            f"(conclusion: {status['conclusion']}, negation: {status['negation']})")
    if outcome == "Unknown":
        return SolverResult("Unknown", {"attempts": {label: status[label] for label in ("conclusion", "negation")}})
    if outcome == "inconsistent":
        if status.get("contradiction") == "proved":
            return SolverResult(None, {"proof": _proof_text(found["contradiction"].output, names)},
                                no_answer="inconsistent premises: Prover9 derives a contradiction from the "
                                          "premises alone, so every option would follow")
        return SolverResult(None, {"proofs": {label: _proof_text(found[label].output, names)
                                              for label in ("conclusion", "negation")},
                                   "limit": f"the search for a contradiction from the premises alone hit its "
                                            f"{seconds} s limit"},
                            no_answer="inconsistent premises: both the conclusion and its negation are provable")
    label = "conclusion" if outcome == "True" else "negation"
    explanation: dict[str, Any] = {"proof": _proof_text(found[label].output, names), "proved": label,
                                   "attempts": {label: "proved"}}
    if UNPROVABLE & set(status.values()):
        explanation["premises"] = "consistent"
    else:
        explanation["limit"] = (f"the premises' consistency is unchecked: the other searches hit their "
                                f"{seconds} s limit")
    return SolverResult(outcome, explanation)


# Prover9's report of when it found the proof; the only part of a proof that changes between runs.
_TIMING = re.compile(r"^% Proof \d+ at [\d.]+ \(\+ [\d.]+\) seconds\.?\n", re.M)
_SYMBOL = re.compile(r"\b[pvcf]_\w+")


def _proof_text(output: str, names: _Names) -> str:
    match = re.search(r"=+ PROOF =+\n(.*?)=+ end of proof", output, re.S)
    if match is None:
        raise ProgramExecutionError("Prover9 reported a proof but printed none")
    proof = _TIMING.sub("", match.group(1)).strip()
    return _SYMBOL.sub(lambda m: names.back.get(m.group(), m.group()), proof)
