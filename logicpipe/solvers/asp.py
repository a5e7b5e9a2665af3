"""Answer set programming on clingo.

A program is plain ASP (facts, rules, constraints, choice rules, aggregates, weak constraints,
#minimize/#maximize, #show, #const) that states its answer in one of two ways:
- `option(a) :- ...` (or `option("A")`), one rule per option of a multiple-choice question: the answer is
  the one option that holds in every answer set (every optimal one, if the program optimises);
- `query :- ...` for a true/false question: True when `query` holds in every answer set, False when in
  none, Unknown when in some.
No answer set (inconsistent premises), no option or several in every answer set are no answer, never a
guess. The program is checked as data first (asp_check.py); clingo runs in the worker pool's process,
under its time and memory bounds, and stops itself at the time bound too.

The explanation is a goal tree drawn from the answer sets: every rule of the program with a plain head is
copied into a rule that records which of its ground instances fired, so the answer atom is shown with the
rule instance that derived it, that instance's body atoms with theirs, and so on down to facts.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import PrerequisiteError, ProgramExecutionError, ProgramParseError, SolverTimeout
from .asp_check import RESERVED, check_text, check_tree, parse_error
from .base import Limits, SolverResult, installed

# Answer sets counted at most for the explanation (the answer never depends on the count).
COUNT_LIMIT = 100
# Nodes of an explanation's goal tree; atoms of an answer set shown.
TREE_NODES = 60
SHOWN_ATOMS = 40
SUPPORT = RESERVED + "rule"


@dataclass
class Rule:
    index: int
    line: int
    text: str
    head: Any  # the head's SymbolicAtom syntax node, or None for a choice, disjunction or constraint
    variables: list[str]
    fact: bool
    # The texts of the head atom and of the positive body atoms (with variables), for the explanation.
    head_text: str = ""
    body_texts: list[str] = field(default_factory=list)


@dataclass
class ASPProgram:
    statements: list[Any]
    mode: str  # "options" or "truth"
    rules: list[Rule] = field(default_factory=list)
    optimise: bool = False


_MISSING = "the ASP solver needs clingo: pip install clingo"


def load_clingo() -> Any:
    try:
        import clingo
        import clingo.ast  # noqa: F401 - a submodule `import clingo` does not load
    except ImportError:
        raise PrerequisiteError(_MISSING) from None
    return clingo


def _variables(node: Any, into: list[str], skip: tuple[str, ...] = ()) -> None:
    """Variable names under `node`, in order, not descending into node kinds in `skip`."""
    from clingo.ast import AST

    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, AST):
            kind = item.ast_type.name
            if kind in skip:
                continue
            if kind == "Variable" and item.name != "_" and item.name not in into:
                into.append(item.name)
            stack.extend(reversed([getattr(item, key) for key in item.child_keys]))
        elif isinstance(item, (list, tuple)) or type(item).__name__ == "ASTSequence":
            stack.extend(reversed(list(item)))


def _plain_head(rule: Any) -> Any:
    head = rule.head
    if head.ast_type.name == "Literal" and head.sign == 0 and head.atom.ast_type.name == "SymbolicAtom":
        return head.atom
    return None


def _answer_atoms(statements: list[Any]) -> set[str]:
    """Which of option/1 and query/0 the program's rule heads define."""
    found: set[str] = set()
    for statement in statements:
        if statement.ast_type.name != "Rule":
            continue
        heads: list[Any] = [statement.head]
        while heads:
            node = heads.pop()
            if node is None:  # an absent guard
                continue
            if not hasattr(node, "ast_type"):  # a sequence of nodes (a choice's elements)
                heads.extend(node)
                continue
            kind = node.ast_type.name
            if kind == "Function" and (node.name, len(node.arguments)) in (("option", 1), ("query", 0)):
                found.add(node.name)
            elif kind == "Pool":
                heads.extend(node.arguments)
            elif kind in ("Literal", "SymbolicAtom", "ConditionalLiteral", "Disjunction", "HeadAggregate",
                          "HeadAggregateElement", "Aggregate"):
                heads.extend(getattr(node, key) for key in node.child_keys if key != "condition")
    return found


class ASPSolver:
    name = "asp"
    formalism = "answer set programming (clingo)"

    def check(self) -> None:
        installed("clingo", _MISSING)

    def load(self) -> None:
        load_clingo()

    def parse(self, text: str) -> ASPProgram:
        check_text(text)
        clingo = load_clingo()
        statements: list[Any] = []
        messages: list[str] = []
        try:
            clingo.ast.parse_string(text, statements.append, logger=lambda _code, message: messages.append(message))
        except RuntimeError:
            raise parse_error(messages, text) from None
        check_tree(statements, text)
        answers = _answer_atoms(statements)
        if not answers:
            raise ProgramParseError("the program states no answer: write one rule `option(a) :- ...` per option "
                                    "(or `query :- ...` for a true/false question)")
        if len(answers) > 1:
            raise ProgramParseError("the program defines both option/1 and query: use one of the two")
        program = ASPProgram(statements, "options" if "option" in answers else "truth")
        lines = text.splitlines()
        for statement in statements:
            kind = statement.ast_type.name
            if kind == "Minimize":
                program.optimise = True
            if kind != "Rule":
                continue
            line = statement.location.begin.line
            variables: list[str] = []
            head = _plain_head(statement)
            if head is not None:
                _variables(head, variables)
                for literal in statement.body:  # global variables: not those local to an aggregate
                    _variables(literal, variables, skip=("BodyAggregate", "Aggregate", "ConditionalLiteral"))
            source = lines[line - 1].strip() if 0 < line <= len(lines) else str(statement)
            body = [str(literal.atom) for literal in statement.body if literal.ast_type.name == "Literal"
                    and literal.sign == 0 and literal.atom.ast_type.name == "SymbolicAtom"] if head is not None else []
            program.rules.append(Rule(len(program.rules), line, source, head, variables, not len(statement.body),
                                      str(head) if head is not None else "", body))
        return program

    def execute(self, program: ASPProgram, limits: Limits) -> SolverResult:
        clingo = load_clingo()
        deadline = time.monotonic() + limits.seconds
        messages: list[str] = []
        control = clingo.Control(["--models=0"], logger=lambda _code, message: messages.append(message.strip()))
        if program.optimise:
            control.configuration.solve.opt_mode = "optN"
        try:  # the explanation's copies of the rules; a rule clingo prints in a form it cannot read back
            support = _support_rules(clingo, program)  # costs the goal tree its rule instances, not the answer
        except RuntimeError:
            support = []
        try:
            with clingo.ast.ProgramBuilder(control) as builder:
                for statement in program.statements:
                    builder.add(statement)
                for rule in support:
                    builder.add(rule)
            control.ground([("base", [])])
        except RuntimeError as exc:
            raise _failed(messages, exc, "grounding") from None
        count, witness = _solve(control, "auto", deadline, messages, stop_after=COUNT_LIMIT + 1)
        if count == 0:
            return SolverResult(None, {"answer_sets": 0, **_notes(messages)},
                                no_answer="inconsistent premises: the program has no answer set")
        _, brave = _solve(control, "brave", deadline, messages)
        _, cautious = _solve(control, "cautious", deadline, messages)
        explanation: dict[str, Any] = {
            "answer_sets": count if count <= COUNT_LIMIT else f"more than {COUNT_LIMIT}",
            **({"optimal": True} if program.optimise else {}),
            "cautious": _shown(cautious), **_notes(messages)}
        which = "optimal answer set" if program.optimise else "answer set"
        if program.mode == "truth":
            if "query" in cautious:
                verdict, atom = "True", "query"
            elif "query" not in brave:
                return SolverResult("False", explanation)
            else:
                return SolverResult("Unknown", explanation)
        else:
            held = sorted(_letter(atom) for atom in cautious if atom.startswith("option("))
            some = sorted(_letter(atom) for atom in brave if atom.startswith("option("))
            if len(held) != 1:
                reason = (f"options {', '.join(held)} all hold in every {which}" if held else
                          f"no option holds in every {which} ({', '.join(some) or 'none'} in some)")
                return SolverResult(None, explanation, no_answer=reason)
            verdict, atom = held[0], next(a for a in cautious if a.startswith("option(") and _letter(a) == held[0])
        explanation["answer"] = atom
        explanation["goal_tree"] = goal_tree(atom, program, cautious, witness)
        return SolverResult(verdict, explanation)


def _letter(atom: str) -> str:
    inner = atom[len("option("):-1].strip('"')
    return inner[:1].upper()


def _support_rules(clingo: Any, program: ASPProgram) -> list[Any]:
    """For rule i with a plain head and a body: `lp_support_rule(i, (X, Y, ...)) :- body.` (its ground
    instances that fire; they change no answer set, since each is fixed by the atoms it depends on)."""
    text = []
    for rule, statement in zip(program.rules, [s for s in program.statements if s.ast_type.name == "Rule"]):
        if rule.head is None or rule.fact:
            continue
        body = "; ".join(str(literal) for literal in statement.body)
        text.append(f"{SUPPORT}({rule.index}, ({', '.join(rule.variables)}{',' if rule.variables else ''})) :- {body}.")
    added: list[Any] = []
    if text:
        clingo.ast.parse_string("\n".join(text), added.append)
    return [node for node in added if node.ast_type.name == "Rule"]


def _solve(control: Any, mode: str, deadline: float, messages: list[str],
           stop_after: int | None = None) -> tuple[int, set[str]]:
    """(answer sets seen, the atoms of the last one: the consequences in brave or cautious mode, else the
    first), within the deadline; with optimisation only proven-optimal models count."""
    control.configuration.solve.enum_mode = mode
    state: dict[str, Any] = {"count": 0, "atoms": None}

    def on_model(model: Any) -> bool:
        optimal = not model.cost or model.optimality_proven
        if optimal:
            state["count"] += 1
            if state["atoms"] is None or mode != "auto":
                state["atoms"] = {str(symbol) for symbol in model.symbols(atoms=True)}
        return stop_after is None or state["count"] < stop_after

    try:
        handle = control.solve(on_model=on_model, async_=True)
        with handle:
            if not handle.wait(max(0.0, deadline - time.monotonic())):
                handle.cancel()
                raise SolverTimeout("clingo ran past the time bound")
            handle.get()
    except RuntimeError as exc:
        raise _failed(messages, exc, "solving") from None
    return state["count"], state["atoms"] or set()


def _failed(messages: list[str], exc: Exception, doing: str) -> Exception:
    text = " ".join(messages) or str(exc)
    if "bad_alloc" in text:
        return MemoryError(f"clingo ran out of memory while {doing}")
    first = " | ".join(" ".join(m.split()) for m in messages[:3]) or str(exc)
    return ProgramExecutionError(f"clingo {doing} failed: {first.replace('<block>:', 'line ')}")


def _notes(messages: list[str]) -> dict[str, Any]:
    """clingo's warnings (an atom no rule derives, ...): often why a program answers nothing."""
    notes = [" ".join(m.split()).replace("<block>:", "line ") for m in messages if "info:" in m or "warning:" in m]
    return {"notes": notes[:5]} if notes else {}


def _shown(atoms: set[str]) -> list[str]:
    return sorted(a for a in atoms if not a.startswith(RESERVED))[:SHOWN_ATOMS]


def goal_tree(root: str, program: ASPProgram, cautious: set[str], witness: set[str]) -> dict[str, Any]:
    """How `root` is derived, as {"nodes": [{"goal", "by", "children"}]} (lp.goal_tree_lines reads it):
    from the rule instances that fire in every answer set where there are such, else in the first."""
    clingo = load_clingo()
    supports = _supports(clingo, program, cautious) or _supports(clingo, program, witness)
    atoms = cautious | witness
    facts = {(rule.head.symbol.name if rule.head is not None and rule.head.symbol.ast_type.name == "Function"
              else "") for rule in program.rules if rule.fact}
    nodes: list[dict[str, Any]] = []
    index: dict[str, int] = {}
    queue = [(root, -1)]
    truncated = 0
    while queue:
        atom, parent = queue.pop(0)
        if atom in index:
            nodes[parent]["children"].append(index[atom])
            continue
        if len(nodes) >= TREE_NODES:
            truncated += 1
            continue
        index[atom] = len(nodes)
        found = supports.get(atom)
        if found is not None:
            rule, body = found
            by = f"line {rule.line}: {rule.text}"
            children = [a for a in body if a in atoms and a != atom]
        else:
            name = atom.split("(")[0]
            by = "fact" if name in facts else "chosen"
            children = []
        nodes.append({"goal": atom, "by": by, "children": []})
        if parent >= 0:
            nodes[parent]["children"].append(index[atom])
        queue.extend((child, index[atom]) for child in children)
    tree: dict[str, Any] = {"nodes": nodes}
    if truncated:
        tree["truncated"] = f"{truncated} more atoms not shown"
    return tree


def _supports(clingo: Any, program: ASPProgram, atoms: set[str]) -> dict[str, tuple[Rule, list[str]]]:
    """Derived atom -> (the rule, the body atoms of its instance), from the support atoms in `atoms`."""
    rules = {rule.index: rule for rule in program.rules}
    found: dict[str, tuple[Rule, list[str]]] = {}
    for text in sorted(a for a in atoms if a.startswith(SUPPORT + "(")):
        symbol = clingo.parse_term(text)
        number, values = symbol.arguments[0].number, symbol.arguments[1].arguments
        rule = rules[number]
        binding = {name: str(value) for name, value in zip(rule.variables, values)}
        head = _ground(clingo, rule.head_text, binding)
        if head not in found:
            found[head] = (rule, [_ground(clingo, atom, binding) for atom in rule.body_texts])
    return found


# A string (left alone) or a variable, in the text clingo prints for an atom.
_VARIABLE = re.compile(r'"(?:\\.|[^"\\])*"|\b[A-Z_][A-Za-z0-9_\']*')


def _ground(clingo: Any, text: str, binding: dict[str, str]) -> str:
    """The atom `text` with its variables replaced by their values, spelt as answer sets show it
    (arithmetic evaluated); left as it is where a variable has no value (an anonymous one)."""
    text = _VARIABLE.sub(lambda m: binding.get(m.group(0), m.group(0)), text)
    try:
        return str(clingo.parse_term(text, logger=lambda _code, _message: None))
    except RuntimeError:
        return text
