"""Logic programming for ProntoQA and ProofWriter on SWI-Prolog.

Program: `Predicates:`, `Facts:`, `Rules:` (`A($x, True) && B($x, False) >>> C($x, True)`), `Query:`,
with `:::` comments. A long-lived engine (lp_prolog.py) saturates each program by forward chaining and
reports every derived fact with its derivation; the query is then looked up among them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import ProgramExecutionError, ProgramParseError
from .base import Limits, Rule, SolverResult
from .lp_prolog import run_program, swipl_path
from .sections import lines_note, quote, walk_sections

SECTIONS = ("Predicates", "Facts", "Rules", "Query")
# The explanation keeps at most this many goal-tree nodes, and this much of each node's text.
MAX_GOAL_NODES = 1000
MAX_NODE_TEXT = 500
_ATOM = re.compile(r"^\s*([A-Za-z_]\w*)\s*\(([^()]*)\)\s*$")
_NAME = re.compile(r"^(\$\w+|\w[\w ]*)$")
_QUOTED = re.compile(r"""^(?:'([^'"$\s][^'"]*)'|"([^'"$\s][^'"]*)")$""")
# Classical negation written as a prefix: in this two-valued encoding, not P(a, True) is P(a, False).
_NEGATED = re.compile(r"^\s*(?:!|~|¬|not\s+)\s*(.*)$|^\s*Not\s*\((.*)\)\s*$", re.IGNORECASE)
# What models write in a query's truth-value slot when they mean "is this so?".
_PLACEHOLDERS = {"bool", "Bool", "Unknown", "unknown"}
_TRUTH_WORDS = {"True", "False"}

# What the parser reads beyond the documented grammar (docs/tasks.md), each recorded on the program that needs it.
RULES = {
    "negation-prefix": Rule("¬P(a, True), not P(a, True) or Not(P(a, True)) read as P(a, False)", False),
    "missing-truth-value": Rule("an atom without its truth value, Cat(Tom), read as Cat(Tom, True)", False),
    "quoted-constant": Rule("a quoted constant, 'Wren', read as Wren", False),
    "multi-word-constant": Rule("a constant of several words, Big Cat", False),
    "query-placeholder": Rule("a placeholder in the query's truth-value slot, P(c, bool), read as asking True "
                              "(Logic-LM's code reads it as False)", False),
    "text-after-query": Rule("lines after the first query line are ignored (Logic-LM reads the first)", True),
}
Lenient = dict[str, tuple[int | None, int | None]]


def _use(lenient: Lenient | None, rule: str, line: int | None) -> None:
    if lenient is not None:
        lenient.setdefault(rule, (line, None))


@dataclass(frozen=True)
class Atom:
    predicate: str
    args: tuple[str, ...]  # constants, or variables spelled "$x"
    value: bool

    def __str__(self) -> str:
        return f"{self.predicate}({', '.join(self.args + (str(self.value),))})"


@dataclass
class LPRule:
    body: list[Atom]
    head: Atom
    text: str


@dataclass
class LPProgram:
    facts: list[tuple[Atom, str]] = field(default_factory=list)
    rules: list[LPRule] = field(default_factory=list)
    query: Atom | None = None
    notes: list[str] = field(default_factory=list)  # what the parser ignored, for explanation["ignored"]
    lenient: Lenient = field(default_factory=dict)  # each rule of RULES the program needed -> (line, column)


def _split_atom(text: str, line: int | None, lenient: Lenient | None = None) -> tuple[str, list[str], bool | None]:
    """(predicate, arguments, truth value or None when the atom does not spell one)."""
    negated = _NEGATED.match(text)
    if negated:
        # A bare sign ('!' with nothing after it) leaves an empty group 1, which is still the one that matched.
        inner = negated.group(1) if negated.group(1) is not None else negated.group(2)
        _use(lenient, "negation-prefix", line)
        predicate, args, value = _split_atom(inner, line, lenient)
        return predicate, args, value is False
    match = _ATOM.match(text)
    if not match:
        raise ProgramParseError("expected an atom such as Pred(arg, True)", line, text=text)
    args = [" ".join(a.split()) for a in match.group(2).split(",")] if match.group(2).strip() else []
    value = None
    if args and args[-1] in ("True", "False"):
        value = args.pop() == "True"
    for index, arg in enumerate(args):
        quoted = _QUOTED.match(arg)
        if quoted:
            _use(lenient, "quoted-constant", line)
            args[index] = quoted.group(1) or quoted.group(2)
        elif not _NAME.match(arg):
            raise ProgramParseError(f"bad argument '{arg}' (constants are names, variables are $names)", line, text=text)
        elif " " in arg and _TRUTH_WORDS & set(arg.split()):
            # A name of several words may not hold a truth value: `Teacher(Eve True)` misses a comma,
            # and read as the constant "Eve True" it would run and answer Unknown.
            raise ProgramParseError(f"'{arg}' is one name holding True or False: is a comma missing before it?",
                                    line, text=text)
        elif " " in arg:
            _use(lenient, "multi-word-constant", line)
    if not args:
        raise ProgramParseError("an atom needs at least one argument besides its truth value", line, text=text)
    return match.group(1), args, value


def parse_atom(text: str, line: int | None, lenient: Lenient | None = None) -> Atom:
    predicate, args, value = _split_atom(text, line, lenient)
    if value is None:
        _use(lenient, "missing-truth-value", line)
    return Atom(predicate, tuple(args), value is not False)


def _parse_rules(code: str, number: int, lenient: Lenient) -> list[LPRule]:
    body_text, _, head_text = code.partition(">>>")
    if ">>>" in head_text:
        raise ProgramParseError("a rule has exactly one '>>>'", number, text=code)
    body = [parse_atom(part, number, lenient) for part in body_text.split("&&")]
    # A conjunctive conclusion derives each of its atoms. A conclusion variable that no premise binds
    # reads as "for everything": the engine derives a general fact, which later matches any constant.
    return [LPRule(body, parse_atom(part, number, lenient), code) for part in head_text.split("&&")]


def _parse_query(text: str, number: int, arities: dict[str, set[int]], notes: list[str], lenient: Lenient) -> Atom:
    predicate, args, value = _split_atom(text, number, lenient)
    last = args[-1]
    if value is None and len(args) > 1 and (last in _PLACEHOLDERS or last.startswith("$")
                                            or len(args) - 1 in arities.get(predicate, ())):
        # The Predicates: declaration `P($x, bool)` says this slot holds the truth value: a placeholder
        # there asks whether the atom is True.
        args.pop()
        value = True
        notes.append(f"read the placeholder {quote(last)} in the query's truth-value slot as True")
        _use(lenient, "query-placeholder", number)
    elif value is None:
        _use(lenient, "missing-truth-value", number)
    if any(a.startswith("$") for a in args):
        raise ProgramParseError("the query must not contain variables", number, text=text)
    return Atom(predicate, tuple(args), value is not False)


def _arities(atoms: Iterable[Atom]) -> dict[str, set[int]]:
    found: dict[str, set[int]] = {}
    for atom in atoms:
        found.setdefault(atom.predicate, set()).add(len(atom.args))
    return found


class LPSolver:
    name = "lp"
    formalism = "logic programming (SWI-Prolog)"
    rules = RULES

    def check(self) -> None:
        swipl_path()

    def parse(self, text: str) -> LPProgram:
        program = LPProgram()
        query: tuple[str, int] | None = None
        after_query: list[str] = []
        not_declarations: list[str] = []
        for line in walk_sections(text, SECTIONS, notes=program.notes):
            if line.section == "Predicates":
                # Documentation only, as in Logic-LM: a declaration is never read.
                if not _ATOM.match(line.code):
                    not_declarations.append(line.raw)
            elif line.section == "Query":
                # Logic-LM uses the first query line; models follow it with their own answer or notes.
                if query is None:
                    query = (line.code, line.number)
                else:
                    after_query.append(line.raw)
                    _use(program.lenient, "text-after-query", line.number)
            # A line's own syntax says what it is: LLMs put rules under Facts: and facts under Rules:.
            elif ">>>" in line.code:
                program.rules.extend(_parse_rules(line.code, line.number, program.lenient))
            else:
                program.facts.append((parse_atom(line.code, line.number, program.lenient), line.comment or line.code))
        if not_declarations:
            program.notes.append(lines_note(len(not_declarations), "in Predicates: that are not declarations",
                                            not_declarations[0]))
        if query is None:
            raise ProgramParseError("missing 'Query:' section or query")
        if not program.facts and not program.rules:
            raise ProgramParseError("the program has no facts and no rules")
        atoms = [atom for atom, _ in program.facts] + [a for r in program.rules for a in (r.head, *r.body)]
        program.query = _parse_query(*query, _arities(atoms), program.notes, program.lenient)
        if after_query:
            program.notes.append(lines_note(len(after_query), "after the query", after_query[0]))
        return program

    def execute(self, program: LPProgram, limits: Limits) -> SolverResult:
        table = _Symbols()
        output = run_program(_to_prolog(program, table), limits.seconds, max(64, limits.memory_mb // 2))
        refused = [line.partition("\t")[2] for line in output.splitlines() if line.startswith("ERROR\t")]
        if refused:
            raise ProgramExecutionError(f"SWI-Prolog refused the program: {'; '.join(refused)}")
        result = _answer(program, _read_known(output, table))
        if program.notes:
            assert result.explanation is not None
            result.explanation["ignored"] = list(program.notes)
        return result


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
    # Variables get Prolog names too (V0, V1, ...): derived facts print them numbered, never by name.
    args = [table.name(a, "V") if a.startswith("$") else table.name(a, "c") for a in atom.args]
    return f"a({table.name(atom.predicate, 'p')}, [{', '.join(args)}], {'true' if atom.value else 'false'})"


def _to_prolog(program: LPProgram, table: _Symbols) -> str:
    lines = []
    for index, (atom, _) in enumerate(program.facts):
        lines.append(f"fact(f{index}, {_term(atom, table)}).")
    for index, rule in enumerate(program.rules):
        body = ", ".join(_term(a, table) for a in rule.body)
        lines.append(f"rule(r{index}, {_term(rule.head, table)}, [{body}]).")
    return "".join(line + "\n" for line in lines)


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
        decoded = tuple(table.back[a] if a[0] == "c" and a in table.back else "$" + a for a in names)
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
        explanation["goal_tree"] = _goal_tree([proved, refuted], known, program)
        return SolverResult(None, explanation, no_answer=f"inconsistent: both {query} and {opposite} are derived")
    if proved:
        explanation["goal_tree"] = _goal_tree([proved], known, program)
        return SolverResult("True", explanation)
    if refuted:
        explanation["goal_tree"] = _goal_tree([refuted], known, program)
        return SolverResult("False", explanation)
    return SolverResult("Unknown", explanation)


def _clip(text: str) -> str:
    return text if len(text) <= MAX_NODE_TEXT else text[:MAX_NODE_TEXT - 3] + "..."


def _goal_tree(roots: list[_Known], known: dict[str, _Known], program: LPProgram) -> dict[str, Any]:
    """The derivation as a flat node table: {"nodes": [{"goal", "by", "children": [ids]}], ...}, node 0
    the root. A fact used by several derivations is one node, referenced by id, so the table grows with
    the facts used, never with the number of paths; it holds at most MAX_GOAL_NODES nodes."""
    nodes: list[dict[str, Any]] = []
    derived: list[_Known | None] = []  # the fact behind each node; None for the "inconsistent" root
    ids: dict[str, int] = {}
    omitted = 0

    def node_for(item: _Known) -> int | None:
        nonlocal omitted
        if item.number not in ids:
            if len(nodes) >= MAX_GOAL_NODES:
                omitted += 1
                return None
            ids[item.number] = len(nodes)
            kind, source = item.source[0], int(item.source[1:])
            by = f"fact: {program.facts[source][1]}" if kind == "f" else f"rule: {program.rules[source].text}"
            nodes.append({"goal": str(item.atom), "by": _clip(by), "children": []})
            derived.append(item)
        return ids[item.number]

    if len(roots) > 1:
        nodes.append({"goal": "inconsistent", "by": "both values derived", "children": []})
        derived.append(None)
        nodes[0]["children"] = [node_for(root) for root in roots]
    else:
        node_for(roots[0])
    # Breadth first, so a truncated table keeps the steps nearest the answer.
    index = 0
    while index < len(nodes):
        item = derived[index]
        for premise in item.premises if item else []:
            child = node_for(known[premise])
            if child is not None:
                nodes[index]["children"].append(child)
        index += 1
    tree: dict[str, Any] = {"nodes": nodes}
    if omitted:
        tree["truncated"] = f"kept the first {MAX_GOAL_NODES} nodes; {omitted} premise links not stored"
    return tree


def goal_tree_lines(explanation: dict[str, Any]) -> list[tuple[int, str]]:
    """The goal tree as (depth, text) lines for a renderer, root at depth 0. A node that several
    derivations share is expanded once and then shown as a reference."""
    tree = explanation.get("goal_tree") or {}
    nodes = tree.get("nodes") or []
    lines: list[tuple[int, str]] = []
    shown: set[int] = set()
    stack = [(0, 0)] if nodes else []
    while stack:
        node_id, depth = stack.pop()
        node = nodes[node_id]
        text = node["goal"] + (f"  ({node['by']})" if node.get("by") else "")
        if node_id in shown:
            lines.append((depth, text + "  [shown above]"))
            continue
        shown.add(node_id)
        lines.append((depth, text))
        stack.extend((child, depth + 1) for child in reversed(node["children"]))
    if tree.get("truncated"):
        lines.append((0, f"(goal tree truncated: {tree['truncated']})"))
    return lines
