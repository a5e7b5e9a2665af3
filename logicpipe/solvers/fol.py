"""First-order logic for FOLIO with Prover9.

Program: `Predicates:` (declarations), `Premises:`, `Conclusion:`, each formula optionally followed by
`::: text`. Verdict as in Logic-LM: conclusion proved -> True, negation proved -> False, else Unknown;
unlike Logic-LM, a prover that runs out of time is a timeout, not Unknown.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ProgramExecutionError, ProgramParseError, SolverTimeout
from .base import Limits, SolverResult
from .fol_parser import Bin, Const, Eq, Func, Not, Pred, Quant, Var, parse_formula
from .prover9 import prover9_path
from .sections import walk_sections

SECTIONS = ("Predicates", "Premises", "Conclusion")


@dataclass
class FOLProgram:
    premises: list[tuple[Any, str]] = field(default_factory=list)
    conclusion: tuple[Any, str] | None = None


class _Names:
    """Prover9 spellings for the program's symbols: prefixes keep constants from being read as
    variables (Prover9 treats free names starting u-z as variables) and keep kinds apart."""

    def __init__(self) -> None:
        self.back: dict[str, str] = {}

    def __call__(self, prefix: str, name: str, arity: int | None = None) -> str:
        safe = re.sub(r"\W", lambda m: f"_{ord(m.group()):x}_", name)
        token = f"{prefix}_{safe}" + (f"_{arity}" if arity else "")
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

    def check(self) -> None:
        prover9_path()

    def parse(self, text: str) -> FOLProgram:
        program = FOLProgram()
        for line in walk_sections(text, SECTIONS, aliases={"Conclusions": "Conclusion"}, unique=False):
            if line.section == "Predicates":
                continue
            formula = parse_formula(line.code, line.number)
            if line.section == "Premises":
                program.premises.append((formula, line.comment or line.code))
            elif program.conclusion is not None:
                raise ProgramParseError("more than one conclusion", line.number, text=line.raw)
            else:
                program.conclusion = (formula, line.comment or line.code)
        if program.conclusion is None:
            raise ProgramParseError("missing 'Conclusion:' section or conclusion")
        if not program.premises:
            raise ProgramParseError("missing 'Premises:' section or premises")
        return program

    def execute(self, program: FOLProgram, limits: Limits) -> SolverResult:
        assert program.conclusion is not None
        names = _Names()
        premises = [to_prover9(formula, names) for formula, _ in program.premises]
        goal = to_prover9(program.conclusion[0], names)
        per_attempt = max(1, int(limits.seconds / 2))
        attempts = {}
        for label, target in (("conclusion", goal), ("negation", f"-({goal})")):
            status, output = _prove(premises, target, per_attempt, limits.memory_mb)
            attempts[label] = status
            if status == "proved":
                verdict = "True" if label == "conclusion" else "False"
                return SolverResult(verdict, {"proof": _proof_text(output, names), "proved": label,
                                              "attempts": attempts})
        if "timeout" in attempts.values():
            raise SolverTimeout(f"Prover9 reached its {per_attempt} s limit without a proof ({attempts})")
        return SolverResult("Unknown", {"attempts": attempts})


def _prove(premises: list[str], goal: str, seconds: int, memory_mb: int) -> tuple[str, str]:
    text = (f"assign(max_seconds, {seconds}).\nassign(max_megs, {max(50, memory_mb // 2)}).\n"
            "clear(auto_denials).\n"
            "formulas(assumptions).\n" + "".join(f"{p}.\n" for p in premises) + "end_of_list.\n"
            f"formulas(goals).\n{goal}.\nend_of_list.\n")
    with tempfile.TemporaryDirectory(prefix="logicpipe-fol-") as tmp:
        path = Path(tmp) / "input.in"
        path.write_text(text)
        try:
            done = subprocess.run([str(prover9_path()), "-f", str(path)], capture_output=True, text=True,
                                  timeout=seconds + 5, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return "timeout", ""
    # Prover9's exit codes: 0 proof, 2 search exhausted, 3 memory, 4 time, 5 given limit, 1 input error.
    if done.returncode == 0:
        return "proved", done.stdout
    if done.returncode == 2:
        return "exhausted", done.stdout
    if done.returncode in (3, 4, 5, 6, 7):
        return "timeout", done.stdout
    error = re.search(r"%%ERROR:(.*)", done.stdout + done.stderr)
    raise ProgramExecutionError(f"Prover9 rejected the input: {error.group(1).strip() if error else done.returncode}")


def _proof_text(output: str, names: _Names) -> str:
    match = re.search(r"=+ PROOF =+\n(.*?)=+ end of proof", output, re.S)
    proof = match.group(1).strip() if match else output
    return re.sub(r"\b[pvcf]_\w+", lambda m: names.back.get(m.group(), m.group()), proof)
