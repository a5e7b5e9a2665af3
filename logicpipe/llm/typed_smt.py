"""The typed grammar of an SMT program's constraints and options, built from its declarations.

With names restricted to declared ones, SmolLM2-135M's SMT programs still failed in Z3: a function given
an argument of another sort, a constraint that is a person rather than a condition. So the last phase of
llm/declared.py writes expressions typed by sort, as solvers/smt.py gives them meaning: a constraint and
an option's argument are conditions; `==` and `!=` compare two terms of one sort; order and arithmetic
are over integers (numbered sorts, IntSort names, `int` results, Count); a function takes terms of its
declared sorts. A scope ranges over one sort and binds its one variable name (the shortest start of the
sort's name no other sort's has: `ForAll([p:people], ...)`), which stands only inside the scope: the
expression rules come in one copy for each set of sorts whose variables are bound and each depth of
nesting (suffix -mNdD: inside the scopes of the sorts in the bit mask N, D calls or parentheses deep). Every text of these rules is a Python
expression that solvers/pyexpr.py reads (the tests hold it to the parser and the solver).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

_NUMBER = re.compile(r"-?[0-9]+")
INT, BOOL = "int", "bool"
CHECKS = ("is_valid", "is_sat", "is_unsat")
# Bounds like the decoding grammar's: conditions joined at one level, operands of a sum, arguments.
_JOINED, _TERMS, _ARGUMENTS = 3, 3, 7
# Sorts a scope may range over: the expression rules come in a copy for each set of them bound (2**4
# copies at most); AR-LSAT's programs range over one to three.
SCOPED = 4
# Calls and parentheses nested in one another: SmolLM2-135M nested functions until its tokens ran
# out (f(g(f(g(...))))), a program cut before its options. Three hold `ForAll([s:slots], Count([p:people],
# slot(p) == s) <= 1)`; the rules come in a copy for each depth.
DEPTH = 3


@dataclass(frozen=True)
class Sorts:
    """What each declared name means: the names of each class (INT, or an enum sort's own class), the
    class and variable names of each sort a scope may range over, and each function's argument and
    result classes (BOOL for a condition)."""

    members: dict[str, list[str]]  # class -> names of that class (INT: IntSort names)
    scoped: dict[str, tuple[str, str]]  # sort name -> (class, its variable's name)
    functions: dict[str, tuple[list[str], str]]


def sorts_of(declared: dict[str, tuple[str, list[str]]], functions: dict[str, list[str]]) -> Sorts:
    """Classes as solvers/smt.py's _World makes them: a sort of numbers is a list of integers, an
    IntSort's names are integers, an EnumSort is a sort of its own (or, where every member belongs to
    one earlier sort, a list of that sort's members)."""
    members: dict[str, list[str]] = {INT: []}
    class_of: dict[str, str] = {"int": INT, "bool": BOOL}
    owner: dict[str, str] = {}
    for name, (kind, names) in declared.items():
        if all(_NUMBER.fullmatch(m) for m in names):
            class_of[name] = INT
        elif kind == "IntSort":
            class_of[name] = INT
            members[INT] += [m for m in names if m not in owner]
            owner.update((m, INT) for m in names)
        elif all(m in owner for m in names) and len({owner[m] for m in names}) == 1:
            class_of[name] = owner[names[0]]
        elif not any(m in owner for m in names):  # else Z3 refuses it, and the program fails with its message
            class_of[name] = f"s{len(members)}"
            members[class_of[name]] = list(dict.fromkeys(names))
            owner.update((m, class_of[name]) for m in names)
    used: set[str] = set()
    scoped = {name: (class_of[name], _variable_prefix(name, used)) for name in declared if name in class_of}
    typed = {}
    for name, types in functions.items():
        classes = [class_of.get(t) for t in types]
        if len(classes) >= 2 and None not in classes and BOOL not in classes[:-1]:
            typed[name] = ([str(c) for c in classes[:-1]], str(classes[-1]))
    return Sorts(members, scoped, typed)


def _variable_prefix(sort: str, used: set[str]) -> str:
    """The shortest lower-case start of the sort's name that no other sort's variable has."""
    word = re.sub(r"[^a-z]", "", sort.lower()) or "v"
    for size in range(1, len(word) + 1):
        if word[:size] not in used:
            used.add(word[:size])
            return word[:size]
    prefix = f"{word}{'v' * len(used)}"
    used.add(prefix)
    return prefix


def typed_rules(sorts: Sorts, quote: Callable[[str], str]) -> dict[str, str]:
    """The rules (smt-constraint and smt-option replaced) for a program with these sorts; `quote`
    makes a GBNF literal."""
    top = _where(0, 0)
    rules = {
        "smt-constraint": f"ws z-bool-{top} ws py-note? eol",
        "smt-option": (f"ws ({_alt(CHECKS, quote)}) ws \"(\" ws z-bool-{top} ws \")\" ws py-note? eol | "
                       f"ws \"is_exception\" ws \"(\" ws ({_alt(CHECKS, quote)}) ws \"(\" ws z-bool-{top} ws \")\" "
                       f"ws \")\" ws py-note? eol | ws \"is_accurate_list\" ws \"(\" ws \"[\" ws z-bool-{top} "
                       f"(ws \",\" ws z-bool-{top}){{0,{_ARGUMENTS}}} ws \"]\" ws \")\" ws py-note? eol"),
        "z-op": '"==" | "!=" | "<=" | ">=" | "<" | ">"',
        "z-eq": '"==" | "!="',
    }
    scoped = list(sorts.scoped)[:SCOPED]
    todo, done = [(0, 0)], set()
    while todo:  # the contexts reachable from the top: a scope adds its sort, a nesting adds depth
        mask, depth = todo.pop()
        if (mask, depth) in done:
            continue
        done.add((mask, depth))
        context, reached = _context(sorts, scoped, mask, depth, quote)
        rules.update(context)
        todo += reached
    return rules


def _where(mask: int, depth: int) -> str:
    return f"m{mask}d{depth}"


def _context(sorts: Sorts, scoped: list[str], mask: int, depth: int,
             quote: Callable[[str], str]) -> tuple[dict[str, str], list[tuple[int, int]]]:
    """The rules of expressions `depth` calls or parentheses deep, inside the scopes of the sorts in
    `mask` (bit i: scoped[i] is bound), and the contexts they refer to. At DEPTH only atoms stand."""
    classes = list(sorts.members)
    where, deeper = _where(mask, depth), _where(mask, depth + 1)
    nests = depth < DEPTH
    reached = [(mask, depth + 1)] if nests else []
    calls: dict[str, list[str]] = {c: [] for c in [*classes, BOOL]}
    for name, (arguments, result) in sorts.functions.items():
        args = ' ws "," ws '.join(_term(c, deeper) for c in arguments)
        if nests:
            calls.setdefault(result, []).append(f"{quote(name)} ws \"(\" ws {args} ws \")\"")
    variables: dict[str, list[str]] = {c: [] for c in classes}
    for bit, sort in enumerate(scoped):
        cls, prefix = sorts.scoped[sort]
        if mask & (1 << bit):
            variables[cls].append(quote(prefix))
    b, n, bd, nd = f"z-bool-{where}", f"z-int-{where}", f"z-bool-{deeper}", f"z-int-{deeper}"

    def scope(name: str, body: Callable[[str], str]) -> list[str]:
        """A call over a one-variable scope of each sort, its body in the context with that sort bound."""
        out = []
        for bit, sort in enumerate(scoped):
            if nests:
                inner = (mask | (1 << bit), depth + 1)
                reached.append(inner)
                out.append(f"{quote(name)} ws \"(\" ws \"[\" ws {quote(sorts.scoped[sort][1])} ws \":\" ws "
                           f"{quote(sort)} ws \"]\" ws \",\" ws {body(_where(*inner))} ws \")\"")
        return out

    rules = {
        b: f"z-batom-{where} (py-sp (\"and\" | \"or\") py-sp z-batom-{where}){{0,{_JOINED}}}",
        f"z-batom-{where}": f"(\"not\" py-sp)? z-bbase-{where}",
        f"z-cmp-{where}": " | ".join([f"{n} ws z-op ws {n}"] + [f"{_term(c, where)} ws z-eq ws {_term(c, where)}"
                                                                for c in classes if c != INT]),
        n: f"(\"-\" ws)? z-iatom-{where} (ws (\"+\" | \"-\" | \"*\") ws z-iatom-{where}){{0,{_TERMS}}}",
    }
    nested_ints = [f"\"(\" ws {nd} ws \")\"", f"\"If\" ws \"(\" ws {bd} ws \",\" ws {nd} ws \",\" ws {nd} ws \")\"",
                   f"\"abs\" ws \"(\" ws {nd} ws \")\""] if nests else []
    rules[f"z-iatom-{where}"] = " | ".join(
        ["py-int", *nested_ints, *scope("Count", lambda inner: f"z-bool-{inner}")]
        + [quote(m) for m in sorts.members[INT]] + calls[INT] + variables[INT])
    bool_calls = [f"\"Not\" ws \"(\" ws {bd} ws \")\"",
                  f"(\"Implies\" | \"Xor\") ws \"(\" ws {bd} ws \",\" ws {bd} ws \")\"",
                  f"(\"And\" | \"Or\") ws \"(\" ws {bd} (ws \",\" ws {bd}){{1,{_ARGUMENTS}}} ws \")\""] if nests else []
    bool_calls += scope("ForAll", lambda inner: f"z-bool-{inner}") + scope("Exists", lambda inner: f"z-bool-{inner}")
    bool_calls += scope("Distinct", lambda inner: "(" + " | ".join(_term(c, inner) for c in classes) + ")")
    for c in classes:
        if nests:
            term = _term(c, deeper)
            bool_calls.append(f"\"Distinct\" ws \"(\" ws {term} (ws \",\" ws {term}){{1,{_ARGUMENTS}}} ws \")\"")
        if c != INT:
            rules[_term(c, where)] = " | ".join([_alt(sorts.members[c], quote)] + calls[c] + variables[c])
    base = [f"z-cmp-{where}", '"True"', '"False"'] + ([f"\"(\" ws {bd} ws \")\""] if nests else [])
    if bool_calls or calls[BOOL]:
        rules[f"z-bcall-{where}"] = " | ".join(bool_calls + calls[BOOL])
        base.append(f"z-bcall-{where}")
    rules[f"z-bbase-{where}"] = " | ".join(base)
    return rules, reached


def _term(cls: str, where: str) -> str:
    return f"z-int-{where}" if cls == INT else f"z-{cls}-{where}"


def _alt(words: list[str] | tuple[str, ...], quote: Callable[[str], str]) -> str:
    return " | ".join(quote(w) for w in sorted(words, key=lambda w: (-len(w), w)))
