"""Logic programming for ProntoQA and ProofWriter on SWI-Prolog.

Program: `Predicates:`, `Facts:`, `Rules:` (`A($x, True) && B($x, False) >>> C($x, True)`), `Query:`,
with `:::` comments. Each problem runs in its own `swipl` process (nothing leaks between problems),
which saturates the program by forward chaining and reports every derived fact with its derivation.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import PrerequisiteError, ProgramExecutionError, ProgramParseError, SolverTimeout
from .base import Limits, SolverResult
from .sections import walk_sections

SECTIONS = ("Predicates", "Facts", "Rules", "Query")
ENGINE = Path(__file__).with_name("lp_engine.pl")
_ATOM = re.compile(r"^\s*([A-Za-z_]\w*)\s*\(([^()]*)\)\s*$")
_NAME = re.compile(r"^(\$[A-Za-z_]\w*|\w[\w ]*)$")
# Classical negation written as a prefix: in this two-valued encoding, not P(a, True) is P(a, False).
_NEGATED = re.compile(r"^\s*(?:!|~|¬|not\s+)\s*(.*)$|^\s*Not\s*\((.*)\)\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class Atom:
    predicate: str
    args: tuple[str, ...]  # constants, or variables spelled "$x"
    value: bool

    def __str__(self) -> str:
        return f"{self.predicate}({', '.join(self.args + (str(self.value),))})"


@dataclass
class Rule:
    body: list[Atom]
    head: Atom
    text: str


@dataclass
class LPProgram:
    facts: list[tuple[Atom, str]] = field(default_factory=list)
    rules: list[Rule] = field(default_factory=list)
    query: Atom | None = None


def parse_atom(text: str, line: int | None) -> Atom:
    negated = _NEGATED.match(text)
    if negated:
        inner = parse_atom(negated.group(1) or negated.group(2), line)
        return Atom(inner.predicate, inner.args, not inner.value)
    match = _ATOM.match(text)
    if not match:
        raise ProgramParseError("expected an atom such as Pred(arg, True)", line, text=text)
    args = [" ".join(a.split()) for a in match.group(2).split(",")] if match.group(2).strip() else []
    value = True
    if args and args[-1] in ("True", "False"):
        value = args.pop() == "True"
    for arg in args:
        if not _NAME.match(arg):
            raise ProgramParseError(f"bad argument '{arg}' (constants are names, variables are $names)", line, text=text)
    if not args:
        raise ProgramParseError("an atom needs at least one argument besides its truth value", line, text=text)
    return Atom(match.group(1), tuple(args), value)


def _parse_rule(code: str, number: int) -> Rule:
    body_text, _, head_text = code.partition(">>>")
    if ">>>" in head_text:
        raise ProgramParseError("a rule has exactly one '>>>'", number, text=code)
    body = [parse_atom(part, number) for part in body_text.split("&&")]
    # A conclusion variable that no premise binds reads as "for everything": the engine derives a
    # general fact, which later matches any constant.
    return Rule(body, parse_atom(head_text, number), code)


class LPSolver:
    name = "lp"
    formalism = "logic programming (SWI-Prolog)"

    def check(self) -> None:
        swipl_path()

    def parse(self, text: str) -> LPProgram:
        program = LPProgram()
        for line in walk_sections(text, SECTIONS):
            if line.section == "Predicates":
                parse_atom(line.code.replace("bool", "True"), line.number)
                continue
            if line.section == "Query":
                if program.query is not None:
                    raise ProgramParseError("only one query is supported", line.number, text=line.raw)
                atom = parse_atom(line.code, line.number)
                if any(a.startswith("$") for a in atom.args):
                    raise ProgramParseError("the query must not contain variables", line.number, text=line.raw)
                program.query = atom
                continue
            # A line's own syntax says what it is: LLMs put rules under Facts: and facts under Rules:.
            if ">>>" in line.code:
                program.rules.append(_parse_rule(line.code, line.number))
            else:
                program.facts.append((parse_atom(line.code, line.number), line.comment or line.code))
        if program.query is None:
            raise ProgramParseError("missing 'Query:' section or query")
        if not program.facts:
            raise ProgramParseError("the program has no facts")
        return program

    def execute(self, program: LPProgram, limits: Limits) -> SolverResult:
        table = _Symbols()
        prolog = _to_prolog(program, table)
        with tempfile.TemporaryDirectory(prefix="logicpipe-lp-") as tmp:
            path = Path(tmp) / "program.pl"
            path.write_text(prolog)
            command = [swipl_path(), "-q", f"--stack-limit={max(64, limits.memory_mb // 2)}m",
                       "-g", "main", "-t", "halt(1)", str(ENGINE), str(path)]
            try:
                done = subprocess.run(command, capture_output=True, text=True, timeout=limits.seconds,
                                      stdin=subprocess.DEVNULL)
                output, code, errors = done.stdout, done.returncode, done.stderr
            except subprocess.TimeoutExpired as exc:
                output = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
                if not output.endswith("END\n"):
                    raise SolverTimeout(f"saturation did not finish within {limits.seconds:g} s") from None
                code, errors = 0, ""  # finished; only the exit lingered
        if code != 0 or not output.endswith("END\n"):
            message = (errors.strip().splitlines() or ["no message"])[-1]
            raise ProgramExecutionError(f"SWI-Prolog failed (exit {code}): {message}")
        known = _read_known(output, table)
        return _answer(program, known)


def swipl_path() -> str:
    path = shutil.which("swipl")
    if path is None:
        raise PrerequisiteError("SWI-Prolog (swipl) not found; install it with: apt-get install swi-prolog-nox")
    return path


class _Symbols:
    """Prolog names for the program's symbols, so no LLM-written text reaches Prolog's reader."""

    def __init__(self) -> None:
        self.forward: dict[str, str] = {}
        self.back: dict[str, str] = {}

    def name(self, symbol: str, prefix: str) -> str:
        key = prefix + symbol
        if key not in self.forward:
            token = f"{prefix}{len(self.forward)}"
            self.forward[key] = token
            self.back[token] = symbol
        return self.forward[key]


def _term(atom: Atom, table: _Symbols) -> str:
    args = [("V_" + a[1:]) if a.startswith("$") else table.name(a, "c") for a in atom.args]
    return f"a({table.name(atom.predicate, 'p')}, [{', '.join(args)}], {'true' if atom.value else 'false'})"


def _to_prolog(program: LPProgram, table: _Symbols) -> str:
    lines = [":- style_check(-singleton)."]
    for index, (atom, _) in enumerate(program.facts):
        lines.append(f"fact(f{index}, {_term(atom, table)}).")
    for index, rule in enumerate(program.rules):
        body = ", ".join(_term(a, table) for a in rule.body)
        lines.append(f"rule(r{index}, {_term(rule.head, table)}, [{body}]).")
    if not program.rules:
        lines.append("rule(_, _, _) :- fail.")
    return "\n".join(lines) + "\n"


@dataclass
class _Known:
    number: str
    atom: Atom
    source: str
    premises: list[str]


def _read_known(output: str, table: _Symbols) -> dict[str, _Known]:
    known = {}
    for line in output.splitlines():
        parts = line.split("\t")
        if len(parts) != 6:
            continue
        number, predicate, args, value, source, premises = parts
        names = [a for a in args.strip("[]").split(",") if a]
        decoded = tuple(table.back.get(a, "$" + a) for a in names)
        atom = Atom(table.back[predicate], decoded, value == "true")
        known[number] = _Known(number, atom, source, [p for p in premises.split(",") if p])
    return known


def _matches(general: Atom, query: Atom) -> bool:
    if (general.predicate, general.value, len(general.args)) != (query.predicate, query.value, len(query.args)):
        return False
    binding: dict[str, str] = {}
    for mine, theirs in zip(general.args, query.args):
        if mine.startswith("$"):
            if binding.setdefault(mine, theirs) != theirs:
                return False
        elif mine != theirs:
            return False
    return True


def _answer(program: LPProgram, known: dict[str, _Known]) -> SolverResult:
    query = program.query
    assert query is not None
    opposite = Atom(query.predicate, query.args, not query.value)
    proved = next((k for k in known.values() if _matches(k.atom, query)), None)
    refuted = next((k for k in known.values() if _matches(k.atom, opposite)), None)
    explanation: dict[str, Any] = {"query": str(query), "derived_facts": len(known)}
    if proved and refuted:
        explanation["goal_tree"] = {"goal": "inconsistent", "by": "both values derived",
                                    "children": [_tree(proved, known, program), _tree(refuted, known, program)]}
        return SolverResult(None, explanation, no_answer=f"inconsistent: both {query} and {opposite} are derived")
    if proved:
        explanation["goal_tree"] = _tree(proved, known, program)
        return SolverResult("True", explanation)
    if refuted:
        explanation["goal_tree"] = _tree(refuted, known, program)
        return SolverResult("False", explanation)
    return SolverResult("Unknown", explanation)


def _tree(node: _Known, known: dict[str, _Known], program: LPProgram) -> dict[str, Any]:
    kind, index = node.source[0], int(node.source[1:])
    by = f"fact: {program.facts[index][1]}" if kind == "f" else f"rule: {program.rules[index].text}"
    return {"goal": str(node.atom), "by": by,
            "children": [_tree(known[p], known, program) for p in node.premises]}
