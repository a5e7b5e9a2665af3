"""Which goals a model (or a command line) may run: the KB's own predicates plus pure builtins.

Every goal position of a parsed goal is checked, including those inside control constructs and
all-solutions builtins; arguments in data positions are data and may hold any term.
"""

from __future__ import annotations

from ..core.errors import ProgramParseError
from .terms import Atom, Compound, Term, Var, show

# Control constructs: name/arity -> indexes of the arguments that are goals.
CONTROL = {
    (",", 2): (0, 1), (";", 2): (0, 1), ("->", 2): (0, 1), ("\\+", 1): (0,), ("not", 1): (0,),
    ("once", 1): (0,), ("ignore", 1): (0,), ("findall", 3): (1,), ("forall", 2): (0, 1),
    ("aggregate_all", 3): (1,),
}

# Pure builtins: no side effects, no I/O, no access to the database or the system.
PURE = {
    ("true", 0), ("fail", 0), ("false", 0),
    *((op, 2) for op in ("=", "\\=", "==", "\\==", "@<", "@>", "@=<", "@>=", "is", "=:=", "=\\=", "<", ">",
                         "=<", ">=", "=..")),
    *((name, 1) for name in ("var", "nonvar", "atom", "number", "integer", "float", "atomic", "compound",
                             "is_list", "callable", "string", "ground")),
    ("member", 2), ("memberchk", 2), ("append", 3), ("length", 2), ("nth0", 3), ("nth1", 3), ("last", 2),
    ("reverse", 2), ("msort", 2), ("sort", 2), ("sort", 4), ("list_to_set", 2), ("sum_list", 2),
    ("sumlist", 2), ("max_list", 2), ("min_list", 2), ("max_member", 2), ("min_member", 2),
    ("numlist", 3), ("between", 3), ("succ", 2), ("plus", 3), ("select", 3),
    ("subtract", 3), ("intersection", 3), ("union", 3), ("delete", 3), ("permutation", 2),
    ("atom_length", 2), ("atom_concat", 3), ("sub_atom", 5), ("atom_number", 2), ("atom_string", 2),
    ("number_codes", 2), ("atom_chars", 2), ("atom_codes", 2), ("char_code", 2), ("upcase_atom", 2),
    ("downcase_atom", 2), ("string_concat", 3), ("string_length", 2), ("string_lower", 2),
    ("string_upper", 2), ("sub_string", 5), ("string_chars", 2), ("number_string", 2), ("term_to_atom", 2),
    ("functor", 3), ("arg", 3), ("copy_term", 2), ("compare", 3), ("dif", 2),
}


# Meta-predicates whose argument is a closure (extended by `extra` arguments when called):
# name/arity -> (index of the closure, extra arguments).
CLOSURES = {
    **{("call", n): (0, n - 1) for n in range(2, 9)},
    **{("maplist", n): (0, n - 1) for n in range(2, 7)},
    **{("foldl", n): (0, n - 2) for n in range(4, 7)},
    ("include", 3): (0, 1), ("exclude", 3): (0, 1), ("partition", 4): (0, 1),
}
# More goal-taking builtins the sandbox lets through (their goal arguments are checked the same way).
CONTROL.update({("call", 1): (0,), ("findall", 4): (1,), ("aggregate_all", 4): (2,), ("*->", 2): (0, 1),
                ("bagof", 3): (1,), ("setof", 3): (1,), ("catch", 3): (0, 2)})


def allowed_builtins() -> set[tuple[str, int]]:
    """Every builtin a model's goal may call: what SWI-Prolog's run-time check (engine.pl) allows."""
    return PURE | set(CONTROL) | set(CLOSURES)


class GoalRejected(ProgramParseError):
    """A goal calls something that is neither a KB predicate nor a whitelisted pure builtin."""


def check_goal(goal: Term, kb_predicates: set[tuple[str, int]]) -> None:
    """Raise GoalRejected naming the first goal that may not run (an explicit stack: no recursion limit).

    SWI-Prolog checks again at every call (engine.pl's checked/1), also where the KB's own rules call
    a term that came from the goal; this check only gives an early, precise message."""
    stack: list[tuple[Term, int]] = [(goal, 0)]  # (goal or closure, arguments the call adds)
    while stack:
        term, extra = stack.pop()
        while isinstance(term, Compound) and term.name == "^" and len(term.args) == 2 and extra == 0:
            term = term.args[1]  # Var^Goal in bagof/setof/aggregate_all
        if isinstance(term, Var):
            raise GoalRejected(f"a variable ({term.name}) cannot be called as a goal")
        if not isinstance(term, (Atom, Compound)):
            raise GoalRejected(f"{show(term)} is not a goal")
        name = term.name
        args = term.args if isinstance(term, Compound) else ()
        key = (name, len(args) + extra)
        if key == (":", 2):
            raise GoalRejected("module-qualified goals (Module:Goal) may not run", text=show(term))
        if key in kb_predicates:
            continue
        if key in CONTROL and extra == 0:
            stack.extend((args[index], 0) for index in CONTROL[key])
            continue
        if key in CLOSURES and extra == 0:
            index, added = CLOSURES[key]
            stack.append((args[index], added))
            continue
        if key in PURE:
            continue
        known = sorted(f"{n}/{a}" for n, a in kb_predicates if n == name)
        hint = f" (the KB defines {', '.join(known)})" if known else ""
        raise GoalRejected(f"{name}/{key[1]} is neither a predicate of the KB nor an allowed pure builtin{hint}",
                           text=show(term))
