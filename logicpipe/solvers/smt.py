"""SMT for AR-LSAT: Logic-LM's SAT-style language interpreted straight into Z3 terms, in process.

Logic-LM rewrites these programs into a Python file and runs it; here every expression is parsed with
`ast`, checked against a whitelist, and given meaning node by node. Scoped quantifiers over the
declared finite lists (`ForAll([x:sort], ...)`, `Exists`, `Count`, `Distinct`) are expanded over the
list's members, which for an EnumSort is exactly Z3's own quantifier and also covers sub-lists of a
sort that Logic-LM's translation cannot handle.
"""

from __future__ import annotations

import ast
import itertools
import queue
import re
import resource
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from ..core.errors import PrerequisiteError, ProgramExecutionError, ProgramParseError, SolverTimeout
from .base import Limits, Rule, SolverResult, installed
from .pyexpr import BASE_NODES, INT_BOUND, clip, mark_scopes, parse_expression, source, symbol
from .sections import split_comment

NODES = BASE_NODES | {ast.Subscript, ast.Slice}
CHECKS = ("is_valid", "is_sat", "is_unsat", "is_accurate_list", "is_exception")
_DECL = re.compile(r"^(\w+)\s*=\s*(EnumSort|IntSort|Function)\s*\((.*)\)\s*$")
_LABEL = re.compile(r"\(([A-E])\)")
_HEADERS = {"declarations": "# Declarations", "constraints": "# Constraints", "options": "# Options"}
# What the parser reads beyond the documented grammar (docs/tasks.md), each recorded on the program that needs it.
RULES = {
    "header-spelling": Rule("a section header spelled other than '# Declarations', '# Constraints', '# Options' "
                            "on a line of its own (Logic-LM finds the exact line)", False),
}
# Address space a solver worker needs to load libz3 and solve an AR-LSAT problem (measured: loading
# alone fails below about 88 MB).
Z3_MEMORY_MB = 128
_ARITHMETIC = ("Int", "Real")
_ORDERS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b}
_ORDER = tuple(_ORDERS)
# The same comparisons in Z3's C API, for two numbers (World.order).
_MAKE_ORDER: dict[type, str] = {ast.Lt: "Z3_mk_lt", ast.LtE: "Z3_mk_le", ast.Gt: "Z3_mk_gt", ast.GtE: "Z3_mk_ge"}


@dataclass
class Line:
    number: int
    text: str
    node: ast.expr


@dataclass
class SMTProgram:
    sorts: list[tuple[str, str, list[str], int]] = field(default_factory=list)  # (name, kind, members, line)
    functions: list[tuple[str, list[str], int]] = field(default_factory=list)  # (name, types, line)
    constraints: list[Line] = field(default_factory=list)
    options: list[tuple[str, Line]] = field(default_factory=list)
    lenient: dict[str, tuple[int | None, int | None]] = field(default_factory=dict)  # rule -> (line, column)


def _members(text: str, number: int) -> list[str]:
    inner = text.strip()
    if not (inner.startswith("[") and inner.endswith("]")):
        raise ProgramParseError("expected a list of members in [...]", number, text=clip(text))
    members = [m.strip().strip("'\"") for m in inner[1:-1].split(",") if m.strip()]
    for member in members:
        if not re.fullmatch(r"-?\w+", member):
            raise ProgramParseError(f"bad member name '{clip(member, 40)}'", number, text=clip(text))
        if re.fullmatch(r"-?\d+", member) and (len(member) > 20 or abs(int(member)) >= INT_BOUND):
            raise ProgramParseError(f"number {clip(member, 24)} is out of range (at most 2**63 - 1 in size)",
                                    number, text=clip(text))
    if not members:
        raise ProgramParseError("a sort needs at least one member", number, text=clip(text))
    return members


def _function_types(text: str, number: int) -> list[str]:
    flat = text.replace("->", ",").replace("[", " ").replace("]", " ")
    types = [t.strip() for t in flat.split(",") if t.strip()]
    if len(types) < 2 or not all(t.isidentifier() for t in types):
        raise ProgramParseError("expected Function([sort, ...] -> [sort])", number, text=clip(text))
    return types


class SMTSolver:
    name = "smt"
    formalism = "satisfiability modulo theories (Z3)"
    rules = RULES

    def check(self) -> None:
        installed("z3", _MISSING)

    def load(self) -> None:
        load_z3()

    def parse(self, text: str) -> SMTProgram:
        program = SMTProgram()
        section = None
        for number, raw in enumerate(text.splitlines(), start=1):
            code, comment = split_comment(raw)
            if code.startswith("#"):
                word = code.lstrip("#").strip().lower()
                if word in ("declarations", "constraints", "options"):
                    section = word
                    if raw != _HEADERS[word]:
                        program.lenient.setdefault("header-spelling", (number, None))
                    continue
                if not comment:
                    continue  # a plain Python-style comment line
            if not code:
                continue
            if section is None:
                raise ProgramParseError("text before '# Declarations'", number, text=clip(raw))
            if code.startswith("Question") and section == "options":
                continue
            declared = _DECL.match(code) if section == "declarations" else None
            if declared:
                name, kind, rest = declared.groups()
                if kind == "Function":
                    program.functions.append((name, _function_types(rest, number), number))
                else:
                    program.sorts.append((name, kind, _members(rest, number), number))
                continue
            node = parse_expression(mark_scopes(code), number, NODES)
            if section == "options":
                label = _LABEL.search(comment)
                letter = label.group(1) if label else chr(ord("A") + len(program.options))
                if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in CHECKS):
                    raise ProgramParseError(f"an option must be one of {', '.join(CHECKS)}", number, text=clip(code))
                program.options.append((letter, Line(number, code, node)))
            else:
                # Constraint-like lines among the declarations are constraints too (Logic-LM drops them).
                program.constraints.append(Line(number, code, node))
        if not program.options:
            raise ProgramParseError("missing '# Options' section or options")
        return program

    def execute(self, program: SMTProgram, limits: Limits) -> SolverResult:
        z3 = load_z3()
        contexts = _contexts(z3)
        context = contexts.take()
        try:
            return self._execute(z3, context, program, limits)
        finally:
            contexts.retire(context)

    def _execute(self, z3: Any, context: Any, program: SMTProgram, limits: Limits) -> SolverResult:
        try:
            world = _World(z3, program, context)
            pre = world.preconditions()
            timeout_ms = int(limits.seconds * 1000)
            checker = _Checker(z3, world.ctx, [term for _, term in pre], timeout_ms)
            # Unsatisfiable premises make every option "valid"; that is no answer, not option A.
            if not checker.sat(z3.BoolVal(True, world.ctx)):
                return SolverResult(None, {"options": {}, "checks": checker.calls},
                                    no_answer=f"inconsistent premises: {_conflict(z3, world.ctx, pre, timeout_ms)}")
            values: dict[str, bool] = {}
            for letter, line in program.options:
                values[letter] = _option(world, checker, line)
        except z3.Z3Exception as exc:
            raise ProgramExecutionError(f"Z3: {exc}") from None
        chosen = [letter for letter, holds in values.items() if holds]
        explanation: dict[str, Any] = {"options": values, "checks": checker.calls}
        if not chosen:
            return SolverResult(None, explanation, no_answer="no option holds")
        # Logic-LM takes the first option that holds; say so when more than one did.
        if len(chosen) > 1:
            explanation["also_held"] = chosen[1:]
        return SolverResult(chosen[0], explanation)


_MISSING = "the SMT solver needs Z3: pip install z3-solver"


def load_z3() -> Any:
    """Import Z3, telling a missing package apart from a memory bound too small to load its library."""
    try:
        import z3
    except ImportError:
        raise PrerequisiteError(_MISSING) from None
    except Exception as exc:  # noqa: BLE001 - z3 reports a failed library load in several ways
        limit = resource.getrlimit(resource.RLIMIT_AS)[0]
        if limit != resource.RLIM_INFINITY and limit < Z3_MEMORY_MB * 2**20:
            raise PrerequisiteError(
                f"the memory bound of {limit // 2**20} MB is too small to load Z3, which needs about "
                f"{Z3_MEMORY_MB} MB: raise --memory-mb") from None
        raise PrerequisiteError(f"Z3 failed to load ({exc}); reinstall it: pip install z3-solver") from None
    return z3


_HELPER_STACK = 512 * 1024


class _Contexts:
    """A fresh Z3 context for each program, made ahead and freed behind on a helper thread. Making and
    freeing one takes about 4.7 ms of Z3's own code (a fifth of AR-LSAT's solving), which then runs
    while the next program is solved, as ctypes lets go of the GIL during Z3's calls."""

    def __init__(self, z3: Any):
        self.z3 = z3
        self.made: queue.SimpleQueue[Any] = queue.SimpleQueue()  # a context, or why none could be made
        self.orders: queue.SimpleQueue[Any] = queue.SimpleQueue()  # None: make one; else a context to free
        self.orders.put(None)
        size = threading.stack_size(_HELPER_STACK)  # counted against a worker's memory bound
        try:
            threading.Thread(target=self._serve, name="z3-contexts", daemon=True).start()
        finally:
            threading.stack_size(size)

    def _serve(self) -> None:
        retired: list[Any] = []
        while True:
            order = self.orders.get()
            if order is not None:
                retired.append(order)
                continue
            # Freed one program late: by then that program's terms are gone, so this drops the last
            # reference and Z3 frees the context here (else wherever the last one goes: no harm).
            retired.clear()
            try:
                self.made.put(self.z3.Context())
            except BaseException as exc:  # noqa: BLE001 - out of memory, say: the program that waits reports it
                self.made.put(exc)

    def take(self) -> Any:
        made = self.made.get()
        self.orders.put(None)
        if isinstance(made, BaseException):
            raise made
        return made

    def retire(self, context: Any) -> None:
        # Only the context: Z3 frees it once nothing of it is left, so never while this thread still
        # holds one of its terms (which freeing its solver here could not promise).
        self.orders.put(context)


@cache
def _contexts(z3: Any) -> _Contexts:
    """The process's one helper, started on its first program."""
    return _Contexts(z3)


def _conflict(z3: Any, ctx: Any, pre: list[tuple[Line | None, Any]], timeout_ms: int) -> str:
    """Name the constraint lines that cannot all hold (an unsat core; declared bounds always apply)."""
    solver = z3.Solver(ctx=ctx)
    solver.set("core.minimize", True)
    solver.set("timeout", timeout_ms)
    tracked: dict[str, Line] = {}
    for index, (line, term) in enumerate(pre):
        if line is None:
            solver.add(term)
        else:
            label = f"line{line.number}_{index}"
            tracked[label] = line
            solver.assert_and_track(term, z3.Bool(label, ctx))
    if solver.check() != z3.unsat:
        return "the constraints have no model (Z3 could not single out the conflicting lines in time)"
    lines = sorted({tracked[str(c)].number: tracked[str(c)].text for c in solver.unsat_core()}.items())
    if not lines:
        return "the declared sorts and functions admit no model"
    shown = "; ".join(f"line {number}: {clip(text, 80)!r}" for number, text in lines[:6])
    return f"these constraints cannot all hold: {shown}" if len(lines) > 1 else f"this constraint cannot hold: {shown}"


class _Checker:
    def __init__(self, z3: Any, ctx: Any, pre: list[Any], timeout_ms: int):
        self.z3 = z3
        self.solver = z3.Solver(ctx=ctx)
        self.solver.set("timeout", timeout_ms)
        self.solver.add(pre)
        self.calls = 0

    def result(self, extra: Any) -> Any:
        # The premises with `extra` assumed (Z3 stands a fresh literal for it), not pushed and popped:
        # the solver keeps what it learnt about the premises from one check to the next.
        self.calls += 1
        outcome = self.solver.check(extra)
        if outcome == self.z3.unknown:
            raise SolverTimeout(f"Z3 could not decide a check ({self.solver.reason_unknown()})")
        return outcome

    def valid(self, term: Any) -> bool:
        return self.result(self.z3.Not(term)) == self.z3.unsat

    def sat(self, term: Any) -> bool:
        return self.result(term) == self.z3.sat


def _option(world: _World, checker: _Checker, line: Line, node: ast.expr | None = None) -> bool:
    """Whether the option on `line` (or, nested in it, `node`) holds. A plain function, not a closure
    calling itself: that would be a reference cycle holding the program's Z3 context, which only the
    garbage collector then frees, in the middle of a later program."""
    node = line.node if node is None else node
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in CHECKS
            and len(node.args) == 1):
        raise _fail(line, f"expected {' / '.join(CHECKS)} with one argument")
    name, (arg,) = node.func.id, node.args
    if name == "is_exception":
        return not _option(world, checker, line, arg)
    if name == "is_accurate_list":
        terms = world.eval(arg, {}, line)
        if not isinstance(terms, list):
            raise _fail(line, "is_accurate_list takes a list")
        terms = [world.boolean(t, line) for t in terms]
        return checker.valid(world.z3.Or(terms)) and all(checker.sat(t) for t in terms)
    term = world.boolean(world.eval(arg, {}, line), line)
    if name == "is_valid":
        return checker.valid(term)
    if name == "is_sat":
        return checker.sat(term)
    return not checker.sat(term)


def _fail(line: Line, message: str) -> ProgramExecutionError:
    return ProgramExecutionError(f"line {line.number}: {message} in {clip(line.text)!r}")


def _same_sort(left: str, right: str) -> bool:
    return left == right or (left in _ARITHMETIC and right in _ARITHMETIC)


def _kind(value: Any) -> str:
    """The sort of a value as a message names it."""
    if isinstance(value, bool):
        return "Bool"
    if isinstance(value, int):
        return "Int"
    if isinstance(value, list):
        return "list"
    sort = getattr(value, "sort", None)
    return str(sort().name()) if sort else type(value).__name__


class _World:
    """Z3 objects for the declarations, and the meaning of each allowed expression node."""

    def __init__(self, z3: Any, program: SMTProgram, context: Any):
        self.z3 = z3
        # A fresh context per problem (_Contexts): Z3 keeps enum sort names per context, and nothing may
        # leak (in one shared context, a program's unsat core came out differently after others had run).
        self.ctx = context
        self.ref = context.ref()
        self.program = program
        self.names: dict[str, Any] = {}
        self.lists: dict[str, tuple[list[Any], Any]] = {}  # name -> (members, sort)
        self.functions: dict[str, Any] = {}
        self.results: dict[str, Any] = {}  # function name -> the z3py class of its applications
        self.applied: dict[tuple[Any, ...], tuple[Any, list[Any]]] = {}  # see _apply
        self.ranges: list[Any] = []
        self.enums: set[str] = set()
        self.placeholders = 0  # made so far: each one's number makes its name unique (see expand)
        self.mixed: set[str] = set()  # lists whose members are of more than one sort
        self.templates = True  # False: every quantifier builds its body anew for each combination
        for name, kind, members, number in program.sorts:
            self._declare_sort(name, kind, members, number)
        for name, types, number in program.functions:
            self._declare_function(name, types, number)

    def _declare_sort(self, name: str, kind: str, members: list[str], number: int) -> None:
        z3 = self.z3
        if all(re.fullmatch(r"-?\d+", m) for m in members):
            self.lists[name] = ([z3.IntVal(int(m), self.ctx) for m in members], z3.IntSort(self.ctx))
            return
        if kind == "IntSort":
            values = [z3.Int(m, self.ctx) for m in members]
            self.names.update(zip(members, values))
            self.lists[name] = (values, z3.IntSort(self.ctx))
            return
        if all(m in self.names for m in members):
            values = [self.names[m] for m in members]
            self.lists[name] = (values, values[0].sort())
            if not all(v.sort().eq(values[0].sort()) for v in values):
                self.mixed.add(name)  # members of several sorts: no one placeholder stands for them
            return
        clash = [m for m in members if m in self.names]
        if clash:
            raise ProgramExecutionError(f"line {number}: member {clash[0]} of sort {name} already belongs to another sort; "
                                        "give each sort its own member names")
        sort, values = z3.EnumSort(name, members, ctx=self.ctx)
        self.enums.add(name)
        self.names.update(zip(members, values))
        self.lists[name] = (list(values), sort)

    def _sort(self, name: str, number: int) -> Any:
        if name == "bool":
            return self.z3.BoolSort(self.ctx)
        if name == "int":
            return self.z3.IntSort(self.ctx)
        if name not in self.lists:
            raise ProgramExecutionError(f"line {number}: unknown sort '{name}'")
        return self.lists[name][1]

    def _declare_function(self, name: str, types: list[str], number: int) -> None:
        z3 = self.z3
        sorts = [self._sort(t, number) for t in types]
        function = z3.Function(name, *sorts)
        self.functions[name] = function
        self.results[name] = _term_classes(z3).get(sorts[-1].kind())
        result = types[-1]
        if result in self.lists and self.lists[result][1] == z3.IntSort(self.ctx) and not all(
            v.decl().kind() == z3.Z3_OP_UNINTERPRETED for v in self.lists[result][0]
        ):
            # A function into a numbered list ranges over that list's numbers (Logic-LM adds the same bound).
            domains = [self.lists[t][0] for t in types[:-1] if t in self.lists]
            if len(domains) == len(types) - 1:
                allowed = self.lists[result][0]
                for combo in itertools.product(*domains):
                    value = function(*combo)
                    self.ranges.append(self.or_([value == a for a in allowed]))

    def bool_(self, value: bool) -> Any:
        return self.z3.BoolVal(value, self.ctx)

    # And, Or, Not, Implies, Xor and Count of terms already checked to be Booleans (`boolean`), each
    # built with one call of Z3's C API, which checks the sorts itself: z3py's own functions look up
    # and compare the sort of every argument twice, which was a fifth of AR-LSAT's solving time.
    def and_(self, parts: list[Any]) -> Any:
        return self._bool_app(self.z3.Z3_mk_and, parts)

    def or_(self, parts: list[Any]) -> Any:
        return self._bool_app(self.z3.Z3_mk_or, parts)

    def _bool_app(self, make: Callable[..., Any], parts: list[Any]) -> Any:
        z3 = self.z3
        return z3.BoolRef(make(self.ref, len(parts), (z3.Ast * len(parts))(*[p.ast for p in parts])), self.ctx)

    def not_(self, part: Any) -> Any:
        return self.z3.BoolRef(self.z3.Z3_mk_not(self.ref, part.ast), self.ctx)

    def implies(self, left: Any, right: Any) -> Any:
        return self.z3.BoolRef(self.z3.Z3_mk_implies(self.ref, left.ast, right.ast), self.ctx)

    def xor(self, left: Any, right: Any) -> Any:
        return self.z3.BoolRef(self.z3.Z3_mk_xor(self.ref, left.ast, right.ast), self.ctx)

    # Comparisons are built in the program's order by the C API (which refuses two sorts; z3py would
    # make an Int a Real to compare them: there are no Reals here). z3py's operators are not: for
    # `f(x) == 1` Python asks the numeral first (its class is a subclass), which builds 1 == f(x), while
    # a quantified variable's placeholder (no numeral) gives the other order (see expand).
    def eq(self, left: Any, right: Any) -> Any:
        z3 = self.z3
        if isinstance(left, z3.ExprRef) and isinstance(right, z3.ExprRef):
            return z3.BoolRef(z3.Z3_mk_eq(self.ref, left.ast, right.ast), self.ctx)
        if isinstance(left, list) and isinstance(right, list):
            # Member by member, as a condition for Z3 to decide: Python's own list comparison would ask
            # whether each pair is the same term, never true of a quantified variable's placeholder.
            if len(left) != len(right):
                return False
            parts = [self.eq(a, b) for a, b in zip(left, right)]
            parts = [p if isinstance(p, z3.BoolRef) else self.bool_(bool(p)) for p in parts]
            return self.and_(parts) if parts else True
        return left == right

    def ne(self, left: Any, right: Any) -> Any:
        z3 = self.z3
        if isinstance(left, z3.ExprRef) and isinstance(right, z3.ExprRef):
            pair = (z3.Ast * 2)(left.ast, right.ast)
            return z3.BoolRef(z3.Z3_mk_distinct(self.ref, 2, pair), self.ctx)
        if isinstance(left, list) and isinstance(right, list):
            same = self.eq(left, right)
            return self.not_(same) if isinstance(same, z3.BoolRef) else not same
        return left != right

    def order(self, op: type, left: Any, right: Any) -> Any:
        """left < right (<=, >, >=) for two numbers; anything else as Python and z3py take it."""
        z3 = self.z3
        if isinstance(left, z3.ArithRef) and isinstance(right, z3.ArithRef):
            make = getattr(z3, _MAKE_ORDER[op])
            return z3.BoolRef(make(self.ref, left.ast, right.ast), self.ctx)
        return _ORDERS[op](left, right)

    def count(self, parts: list[Any]) -> Any:
        """The number of `parts` (at least one) that hold: Sum(If(part, 1, 0), ...)."""
        z3 = self.z3
        # Every term passed as a pointer stays referenced (a Python object here) until Z3 holds it.
        one, zero = z3.IntVal(1, self.ctx), z3.IntVal(0, self.ctx)
        ifs = [z3.ArithRef(z3.Z3_mk_ite(self.ref, p.ast, one.ast, zero.ast), self.ctx) for p in parts]
        return z3.ArithRef(z3.Z3_mk_add(self.ref, len(ifs), (z3.Ast * len(ifs))(*[i.ast for i in ifs])), self.ctx)

    def preconditions(self) -> list[tuple[Line | None, Any]]:
        """Every term that holds in all models, with the constraint line it came from (None: a bound
        the declarations imply)."""
        terms: list[tuple[Line | None, Any]] = [(None, term) for term in self.ranges]
        for line in self.program.constraints:
            terms.append((line, self.boolean(self.eval(line.node, {}, line), line)))
        return terms

    def boolean(self, value: Any, line: Line) -> Any:
        if isinstance(value, bool):
            return self.bool_(value)
        if not self.z3.is_bool(value):
            raise _fail(line, f"expected a condition (true or false), got a value of sort {_kind(value)}")
        return value

    def scope(self, node: ast.expr, line: Line) -> list[tuple[str, str]]:
        """The (variable, sort) pairs of a scope such as [x:sort, y:other]."""
        if not (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "_"):
            raise _fail(line, "expected a scope such as [x:sort]")
        parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        out = []
        for part in parts:
            if not (isinstance(part, ast.Slice) and isinstance(part.lower, ast.Name)
                    and isinstance(part.upper, ast.Name) and part.step is None):
                raise _fail(line, "expected name:sort in a scope")
            listed = part.upper.id
            if listed in ("int", "bool") or listed not in self.lists:
                raise _fail(line, f"cannot range over '{listed}' (declare it as a sort)")
            out.append((part.lower.id, listed))
        return out

    def expand(self, scope_node: ast.expr, body: ast.expr, env: dict[str, Any], line: Line) -> list[Any]:
        """The body once for each combination of the scope's members. It is built once, with a
        placeholder constant for each variable, and each instance is one substitution by Z3 (in C):
        building it anew for every combination (`each`) took most of AR-LSAT's time in Python. The
        instances are the terms `each` builds: Z3 substitutes without simplifying, and nothing built
        depends on a variable's value rather than its sort (comparisons: see eq)."""
        scope = self.scope(scope_node, line)
        combos = list(itertools.product(*[self.lists[listed][0] for _, listed in scope]))
        if not combos:
            return []
        if not self.templates or any(listed in self.mixed for _, listed in scope):
            return self.each(scope, combos, body, env, line)
        z3 = self.z3
        holders = []
        for name, listed in scope:
            # '!' cannot occur in a program's names, so no declared constant is taken for a placeholder.
            holders.append(z3.Const(f"{name}!{self.placeholders}", self.lists[listed][1]))
            self.placeholders += 1
        inner = dict(env)
        inner.update({name: holder for (name, _), holder in zip(scope, holders)})
        template = self.eval(body, inner, line)
        froms = (z3.Ast * len(holders))(*[h.ast for h in holders])
        return [self._instance(template, holders, froms, combo) for combo in combos]

    def each(self, scope: list[tuple[str, str]], combos: list[tuple[Any, ...]], body: ast.expr,
             env: dict[str, Any], line: Line) -> list[Any]:
        """The body built anew for each combination of members."""
        results = []
        for combo in combos:
            inner = dict(env)
            inner.update({name: value for (name, _), value in zip(scope, combo)})
            results.append(self.eval(body, inner, line))
        return results

    def _instance(self, value: Any, holders: list[Any], froms: Any, combo: tuple[Any, ...]) -> Any:
        if isinstance(value, list):
            return [self._instance(v, holders, froms, combo) for v in value]
        z3 = self.z3
        if not isinstance(value, z3.ExprRef):
            return value  # a Python truth value: the same for every combination
        for holder, member in zip(holders, combo):
            if value is holder:
                return member
        tos = (z3.Ast * len(combo))(*[m.ast for m in combo])
        return type(value)(z3.Z3_substitute(self.ref, value.ast, len(combo), froms, tos), self.ctx)

    def eval(self, node: ast.expr, env: dict[str, Any], line: Line) -> Any:
        """The Z3 term (or Python list of terms) for a node. The innermost node whose construction
        fails names itself in the message."""
        try:
            return self._eval(node, env, line)
        except (self.z3.Z3Exception, ArithmeticError, AttributeError, TypeError, ValueError) as exc:
            reason = self._mismatch(node, env, line) or f"cannot build {source(node)!r}: {_z3_message(exc)}"
            raise _fail(line, reason) from None

    def _eval(self, node: ast.expr, env: dict[str, Any], line: Line) -> Any:
        z3 = self.z3
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool):
                return self.bool_(node.value)
            if isinstance(node.value, int):
                return z3.IntVal(node.value, self.ctx)
            raise _fail(line, "string constants have no meaning here")
        if isinstance(node, ast.Name):
            for table in (env, self.names):
                if node.id in table:
                    return table[node.id]
            if node.id in self.lists:
                return list(self.lists[node.id][0])
            if node.id in ("True", "False"):
                return self.bool_(node.id == "True")
            raise _fail(line, f"name '{node.id}' is not defined")
        if isinstance(node, (ast.List, ast.Tuple)):
            return [self.eval(e, env, line) for e in node.elts]
        if isinstance(node, ast.BoolOp):
            parts = [self.boolean(self.eval(v, env, line), line) for v in node.values]
            return self.and_(parts) if isinstance(node.op, ast.And) else self.or_(parts)
        if isinstance(node, ast.UnaryOp):
            value = self.eval(node.operand, env, line)
            if isinstance(node.op, ast.Not):
                return self.not_(self.boolean(value, line))
            return -value if isinstance(node.op, ast.USub) else value
        if isinstance(node, ast.BinOp):
            left, right = self.eval(node.left, env, line), self.eval(node.right, env, line)
            op = type(node.op)
            if op is ast.Add:
                return left + right
            if op is ast.Sub:
                return left - right
            if op is ast.Mult:
                return left * right
            if op is ast.FloorDiv:
                return left / right
            return left % right
        if isinstance(node, ast.Compare):
            return self._compare(node, env, line)
        if isinstance(node, ast.Call):
            return self._call(node, env, line)
        raise _fail(line, f"'{ast.unparse(node)}' has no meaning here")

    def _compare(self, node: ast.Compare, env: dict[str, Any], line: Line) -> Any:
        operands = [node.left, *node.comparators]
        values = [self.eval(o, env, line) for o in operands]
        parts = []
        for op, left, right in zip(node.ops, values, values[1:]):
            kind = type(op)
            if kind in (ast.In, ast.NotIn):
                if not isinstance(right, list):
                    raise _fail(line, f"'{symbol(op)}' needs a list on its right in {source(node)!r}")
                member = self.or_([self.boolean(self.eq(left, r), line) for r in right]) if right else self.bool_(False)
                parts.append(member if kind is ast.In else self.not_(member))
                continue
            if kind is ast.Eq:
                parts.append(self.eq(left, right))
            elif kind is ast.NotEq:
                parts.append(self.ne(left, right))
            else:
                parts.append(self.order(kind, left, right))
        # Python reads a < b < c as (a < b) and (b < c); so do we.
        return parts[0] if len(parts) == 1 else self.and_([self.boolean(p, line) for p in parts])

    def _mismatch(self, node: ast.expr, env: dict[str, Any], line: Line) -> str | None:
        """What is wrong with the sorts of a node's operands, asked only once Z3 or Python refused
        to build it (the operands themselves built fine). None: nothing found to name."""
        if isinstance(node, ast.BinOp):
            return self._not_numbers(node.op, [node.left, node.right], env, line)
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            for op, pair in zip(node.ops, zip(operands, operands[1:])):
                if isinstance(op, _ORDER):
                    found = self._not_numbers(op, list(pair), env, line)
                else:
                    left, right = (self.eval(o, env, line) for o in pair)
                    rights = right if isinstance(op, (ast.In, ast.NotIn)) else [right]
                    found = next((f"{source(node)!r} compares a value of sort {_kind(left)} with one of sort "
                                  f"{_kind(r)}" for r in rights if not _same_sort(_kind(left), _kind(r))), None)
                if found:
                    return found
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in self.functions:
            function = self.functions[node.func.id]
            for index, arg in enumerate(node.args):
                expected, got = str(function.domain(index).name()), _kind(self.eval(arg, env, line))
                if not _same_sort(expected, got):
                    return (f"argument {index + 1} of {node.func.id} must be of sort {expected}, but "
                            f"{source(arg)!r} is of sort {got}")
        return None

    def _not_numbers(self, op: ast.AST, operands: list[ast.expr], env: dict[str, Any], line: Line) -> str | None:
        for node in operands:
            kind = _kind(self.eval(node, env, line))
            if kind not in _ARITHMETIC:
                order = " (members of an EnumSort have no order; compare numbers, e.g. positions from a " \
                        "function into a numbered sort)" if kind in self.enums and isinstance(op, _ORDER) else ""
                return f"'{symbol(op)}' needs numbers, but {source(node)!r} is of sort {kind}{order}"
        return None

    def _call(self, node: ast.Call, env: dict[str, Any], line: Line) -> Any:
        z3 = self.z3
        name, args = node.func.id if isinstance(node.func, ast.Name) else "", node.args
        if name in ("ForAll", "Exists", "Count") or (name in ("Distinct", "Sum") and args and _is_scope(args[0])):
            if len(args) != 2:
                raise _fail(line, f"{name} takes a scope and an expression")
            items = self.expand(args[0], args[1], env, line)
            if name == "ForAll":
                return self.and_([self.boolean(i, line) for i in items]) if items else self.bool_(True)
            if name == "Exists":
                return self.or_([self.boolean(i, line) for i in items]) if items else self.bool_(False)
            if name == "Count":
                return self.count([self.boolean(i, line) for i in items]) if items else z3.IntVal(0, self.ctx)
            return z3.Distinct(items) if name == "Distinct" else z3.Sum(items)
        values = [self.eval(a, env, line) for a in args]
        if len(values) == 1 and isinstance(values[0], list) and name in ("And", "Or", "Distinct", "Sum"):
            values = values[0]
        if name in self.functions:
            function = self.functions[name]
            if len(values) != function.arity():
                raise _fail(line, f"{name} takes {function.arity()} arguments")
            return self._apply(name, function, values)
        if name in ("And", "Or"):
            parts = [self.boolean(v, line) for v in values]
            if not parts:
                return self.bool_(name == "And")
            return self.and_(parts) if name == "And" else self.or_(parts)
        builtins: dict[str, tuple[int, Callable[..., Any]]] = {
            "Not": (1, lambda a: self.not_(self.boolean(a, line))),
            "Implies": (2, lambda a, b: self.implies(self.boolean(a, line), self.boolean(b, line))),
            "Xor": (2, lambda a, b: self.xor(self.boolean(a, line), self.boolean(b, line))),
            "If": (3, lambda c, a, b: z3.If(self.boolean(c, line), a, b)),
            "Abs": (1, lambda a: z3.If(a >= 0, a, -a)),
            "abs": (1, lambda a: z3.If(a >= 0, a, -a)),
        }
        if name in builtins:
            arity, build = builtins[name]
            if len(values) != arity:
                raise _fail(line, f"{name} takes {arity} arguments")
            return build(*values)
        if name == "Distinct":
            return z3.Distinct(values) if len(values) > 1 else self.bool_(True)
        if name == "Sum":
            return z3.Sum(values) if values else z3.IntVal(0, self.ctx)
        raise _fail(line, f"unknown function '{name}'")

    def _apply(self, name: str, function: Any, values: list[Any]) -> Any:
        """`function(*values)`, built once per program: programs name the same application again and
        again (AR-LSAT's: 3,343 applications, 1,669 terms). The key is the arguments' Z3 ids; the
        arguments are kept with the term, so no id is freed and given to another term meanwhile."""
        try:
            key = (name, *(value.get_id() for value in values))
        except AttributeError:  # an argument that is no Z3 term (a list): Z3 refuses it below
            return function(*values)
        built = self.applied.get(key)
        if built is None:
            made = self.results[name]
            if made is None:
                term = function(*values)
            else:  # one call of the C API, which checks the arguments' sorts (z3py's cast checks each twice)
                z3 = self.z3
                arguments = (z3.Ast * len(values))(*[value.ast for value in values])
                term = made(z3.Z3_mk_app(self.ref, function.ast, len(values), arguments), self.ctx)
            built = self.applied[key] = (term, values)
        return built[0]


@cache
def _term_classes(z3: Any) -> dict[int, Any]:
    """The z3py class of a term by the kind of its sort, as z3py's own _to_expr_ref picks it (for the
    sorts a program can declare)."""
    return {z3.Z3_BOOL_SORT: z3.BoolRef, z3.Z3_INT_SORT: z3.ArithRef, z3.Z3_DATATYPE_SORT: z3.DatatypeRef}


def _is_scope(node: ast.expr) -> bool:
    return isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "_"


def _z3_message(exc: Exception) -> str:
    value = getattr(exc, "value", None)
    text = value.decode(errors="replace") if isinstance(value, bytes) else str(value or exc)
    return clip(text, 200)
