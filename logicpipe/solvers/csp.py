"""Constraint satisfaction for LogicalDeduction on python-constraint2.

Program: `Domain:` (informational), `Variables:` (`name [IN] [values]`), `Constraints:` (expressions
or `AllDifferentConstraint([...])`), `Query:` (`A) expression`). An option is accepted only when it
holds in every solution, Logic-LM's rule.
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import PrerequisiteError, ProgramCheckError, ProgramExecutionError, ProgramParseError
from .base import Limits, Rule, SolverResult, installed
from .pyexpr import BASE_NODES, clip, parse_expression, source
from .sections import walk_sections

SECTIONS = ("Domain", "Variables", "Constraints", "Query")
_FUNCTIONS: dict[str, Callable[..., Any]] = {"abs": abs, "min": min, "max": max}
_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod}
_COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
            ast.Gt: operator.gt, ast.GtE: operator.ge,
            ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}
_OPTION = re.compile(r"^\(?([A-Za-z])\)\s*(.*)$")
# What the parser reads beyond the documented grammar (docs/tasks.md), each recorded on the program that needs it.
RULES = {
    "range-domain": Rule("a domain written range(a, b)", True),
    "no-domain-section": Rule("a program without the Domain: section (Logic-LM's parser requires it)", False),
}

# A compiled expression takes the values of the variables it uses, in the order it first used them (its
# `used` list): the form python-constraint calls a constraint with, so no dict is built per call.
Compiled = Callable[[tuple[Any, ...]], Any]


@dataclass
class Constraint:
    variables: list[str]
    check: Compiled | None  # None: all different
    text: str
    line: int


@dataclass
class CSPProgram:
    variables: dict[str, list[Any]] = field(default_factory=dict)
    constraints: list[Constraint] = field(default_factory=list)
    options: list[tuple[str, Compiled, str, list[str]]] = field(default_factory=list)  # letter, check, text, used
    notes: list[str] = field(default_factory=list)  # what the parser ignored or dropped
    lenient: dict[str, tuple[int | None, int | None]] = field(default_factory=dict)  # rule -> (line, column)


def _sections(text: str, program: CSPProgram) -> dict[str, list[tuple[int, str]]]:
    seen: set[str] = set()
    found: dict[str, list[tuple[int, str]]] = {name: [] for name in SECTIONS}
    for line in walk_sections(text, SECTIONS, seen=seen, notes=program.notes):
        found[line.section].append((line.number, line.code))
    for name in ("Variables", "Constraints", "Query"):
        if name not in seen:
            raise ProgramParseError(f"missing section '{name}:'")
    if "Domain" not in seen:
        program.lenient.setdefault("no-domain-section", (None, None))
    return found


def _domain(text: str, number: int) -> list[Any]:
    node = parse_expression(text, number, BASE_NODES, frozenset({"range"}))
    bounds = [a.value for a in getattr(node, "args", []) if isinstance(a, ast.Constant) and type(a.value) is int]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range" and (
            1 <= len(bounds) == len(node.args) <= 3):
        # A huge range is left to the worker's memory bound, which reports it. A step of 0 (Python's
        # ValueError) and an empty range depend on values, not on the syntax: check errors.
        if bounds[2:] == [0]:
            raise ProgramCheckError("a range's step must not be 0", number, text=clip(text))
        values = range(*bounds)
        if not values:
            raise ProgramCheckError("the domain is empty", number, text=clip(text))
        return list(values)
    if isinstance(node, (ast.List, ast.Tuple)):
        if any(isinstance(e, ast.Name) for e in node.elts):
            words = ", ".join(repr(e.id) for e in node.elts if isinstance(e, ast.Name))
            raise ProgramParseError(f"domain values must be constants: quote names, as in [{words}]",
                                    number, text=clip(text))
        if node.elts and all(isinstance(e, ast.Constant) for e in node.elts):
            return [e.value for e in node.elts if isinstance(e, ast.Constant)]
    raise ProgramParseError("a domain must be a non-empty list of constants or range(a, b)", number, text=clip(text))


def _compile(node: ast.expr, known: dict[str, Any], used: list[str], number: int, text: str,
             checks: list[ProgramCheckError]) -> Compiled:
    """Turn a checked tree into a closure over the values of `used` (which it extends). Operators and
    calls turn a Python failure at run time into a ProgramExecutionError naming the line and the
    sub-expression."""
    if isinstance(node, ast.Constant):
        value = node.value
        return lambda env: value
    if isinstance(node, ast.Name):
        name = node.id
        if name in ("True", "False"):
            return (lambda env: True) if name == "True" else (lambda env: False)
        if name not in known:
            checks.append(ProgramCheckError(f"unknown variable '{name}'", number, node.col_offset + 1, text))
            return lambda env: None
        if name not in used:
            used.append(name)
        slot = used.index(name)
        return lambda env: env[slot]

    def compile_(child: ast.expr) -> Compiled:
        return _compile(child, known, used, number, text, checks)

    if isinstance(node, ast.BoolOp):
        parts = [compile_(v) for v in node.values]
        if isinstance(node.op, ast.And):
            return lambda env: all(p(env) for p in parts)
        return lambda env: any(p(env) for p in parts)
    if isinstance(node, ast.UnaryOp):
        inner = compile_(node.operand)
        if isinstance(node.op, ast.Not):
            return lambda env: not inner(env)
        if isinstance(node.op, ast.USub):
            def negate(env: tuple[Any, ...]) -> Any:
                try:
                    return -inner(env)
                except TypeError as exc:
                    raise _failed(exc, node, number) from None
            return negate
        return inner
    if isinstance(node, ast.BinOp):
        left, right, op = compile_(node.left), compile_(node.right), _BINARY[type(node.op)]

        def binary(env: tuple[Any, ...]) -> Any:
            try:
                return op(left(env), right(env))
            except (ArithmeticError, TypeError) as exc:
                raise _failed(exc, node, number) from None
        return binary
    if isinstance(node, ast.Compare):
        terms = [compile_(node.left)] + [compile_(c) for c in node.comparators]
        ops = [_COMPARE[type(o)] for o in node.ops]
        if len(ops) == 1:  # the common case, kept lean: constraints run once per candidate assignment
            first, second, only = terms[0], terms[1], ops[0]

            def compare_two(env: tuple[Any, ...]) -> bool:
                try:
                    return only(first(env), second(env))
                except TypeError as exc:
                    raise _failed(exc, node, number) from None
            return compare_two

        def compare(env: tuple[Any, ...]) -> bool:
            values = [t(env) for t in terms]
            try:
                return all(op(values[i], values[i + 1]) for i, op in enumerate(ops))
            except TypeError as exc:
                raise _failed(exc, node, number) from None
        return compare
    if isinstance(node, (ast.List, ast.Tuple)):
        items = [compile_(e) for e in node.elts]
        return lambda env: [i(env) for i in items]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        func = _call_target(node, number, text)
        args = [compile_(a) for a in node.args]

        def call(env: tuple[Any, ...]) -> Any:
            try:
                return func(*[a(env) for a in args])
            except (TypeError, ValueError) as exc:
                raise _failed(exc, node, number) from None
        return call
    raise ProgramParseError(f"unsupported expression '{source(node)}'", number, text=clip(text))


def _call_target(node: ast.Call, number: int, text: str) -> Callable[..., Any]:
    name = node.func.id if isinstance(node.func, ast.Name) else ""
    if name == "AllDifferentConstraint":
        raise ProgramParseError("AllDifferentConstraint([...]) must stand alone on its own line, not inside "
                                "an expression", number, node.col_offset + 1, text)
    args = node.args
    if name == "abs" and len(args) != 1:
        raise ProgramParseError("abs takes one argument", number, node.col_offset + 1, text)
    if name in ("min", "max") and not (len(args) > 1 or (
            len(args) == 1 and isinstance(args[0], (ast.List, ast.Tuple)) and args[0].elts)):
        raise ProgramParseError(f"{name} takes two or more values, or one non-empty list", number,
                                node.col_offset + 1, text)
    return _FUNCTIONS[name]


def _failed(exc: Exception, node: ast.expr, number: int) -> ProgramExecutionError:
    reason = "division by zero" if isinstance(exc, ZeroDivisionError) else str(exc)
    return ProgramExecutionError(f"line {number}: cannot evaluate {source(node)!r}: {reason}")


_MISSING = "the CSP solver needs python-constraint2: pip install python-constraint2"


def _constraint_module() -> Any:
    try:
        import constraint
    except ImportError:
        raise PrerequisiteError(_MISSING) from None
    return constraint


class CSPSolver:
    name = "csp"
    formalism = "constraint satisfaction (python-constraint2)"
    rules = RULES

    def check(self) -> None:
        installed("constraint", _MISSING)

    def load(self) -> None:
        _constraint_module()

    def parse(self, text: str) -> CSPProgram:
        """The syntax of the whole program first, then its names and values: a check error (an unknown
        variable, say) is raised only once every line has parsed, so a parse error is exactly what the
        grammar (llm/grammars/csp.gbnf) rejects."""
        program = CSPProgram()
        checks: list[ProgramCheckError] = []
        sections = _sections(text, program)
        domains: dict[str, list[Any]] = {}  # variables mostly share one domain text
        for number, line in sections["Variables"]:
            name, sep, domain = line.partition("[IN]")
            name = name.strip()
            if not sep or not name.isidentifier():
                raise ProgramParseError("expected 'name [IN] [values]'", number, text=clip(line))
            if name in program.variables:
                checks.append(ProgramCheckError(f"variable '{name}' declared twice", number, text=clip(line)))
            if domain.strip().startswith("range"):
                program.lenient.setdefault("range-domain", (number, None))
            if domain not in domains:
                try:
                    domains[domain] = _domain(domain, number)
                except ProgramCheckError as exc:
                    checks.append(exc)
                    domains[domain] = []
            program.variables[name] = domains[domain]
        calls = frozenset(_FUNCTIONS) | {"AllDifferentConstraint"}
        for number, line in sections["Constraints"]:
            node = parse_expression(line, number, BASE_NODES, calls)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "AllDifferentConstraint":
                names = _all_different(node, program.variables, number, line, checks)
                program.constraints.append(Constraint(names, None, line, number))
                continue
            used: list[str] = []
            check = _compile(node, program.variables, used, number, line, checks)
            program.constraints.append(Constraint(used, check, line, number))
        for number, line in sections["Query"]:
            match = _OPTION.match(line)
            if not match:
                raise ProgramParseError("expected an option such as 'A) variable == 2'", number, text=clip(line))
            node = parse_expression(match.group(2), number, BASE_NODES, frozenset(_FUNCTIONS))
            used = []
            compiled = _compile(node, program.variables, used, number, line, checks)
            program.options.append((match.group(1).upper(), compiled, line, used))
        if not program.options:
            raise ProgramParseError("the Query section has no options")
        if checks:
            raise checks[0]
        return program

    def execute(self, program: CSPProgram, limits: Limits) -> SolverResult:
        result = self._solve(program)
        if program.notes:
            result.explanation = {**(result.explanation or {}), "ignored": program.notes}
        return result

    def _solve(self, program: CSPProgram) -> SolverResult:
        library = _constraint_module()
        problem = library.Problem()
        for name, domain in program.variables.items():
            problem.addVariable(name, list(domain))
        for constraint in program.constraints:
            if constraint.check is None:
                problem.addConstraint(library.AllDifferentConstraint(), constraint.variables)
            elif constraint.variables:
                problem.addConstraint(library.FunctionConstraint(_positional(constraint.check)), constraint.variables)
            elif not constraint.check(()):
                return SolverResult(None, {"solutions": 0}, no_answer=(
                    f"inconsistent premises: constraint {clip(constraint.text)!r} on line {constraint.line} "
                    "is always false"))
        solutions = problem.getSolutions()
        explanation = {"solutions": len(solutions), "sample": solutions[:5]}
        if not solutions:
            return SolverResult(None, explanation, no_answer="inconsistent premises: the constraints have no solution")
        for letter, check, _text, used in program.options:
            if all(check(tuple(solution[name] for name in used)) for solution in solutions):
                explanation["entailed"] = letter
                return SolverResult(letter, explanation)
        return SolverResult(None, explanation,
                            no_answer=f"no option holds in all {len(solutions)} solutions")


def _positional(check: Compiled) -> Callable[..., Any]:
    """python-constraint calls a constraint with one argument per variable (and reads its truth)."""
    return lambda *values: check(values)


def _all_different(node: ast.Call, known: dict[str, Any], number: int, text: str,
                   checks: list[ProgramCheckError]) -> list[str]:
    args = node.args
    if len(args) == 1 and isinstance(args[0], (ast.List, ast.Tuple)):
        args = args[0].elts
    names = []
    for arg in args:
        if not isinstance(arg, ast.Name):
            raise ProgramParseError("AllDifferentConstraint takes a list of variables", number, text=clip(text))
        if arg.id not in known:
            checks.append(ProgramCheckError(f"unknown variable '{arg.id}' in AllDifferentConstraint", number,
                                            arg.col_offset + 1, text))
        names.append(arg.id)
    return names
