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


class GoalRejected(ProgramParseError):
    """A goal calls something that is neither a KB predicate nor a whitelisted pure builtin."""


def check_goal(goal: Term, kb_predicates: set[tuple[str, int]]) -> None:
    """Raise GoalRejected naming the first goal that may not run."""
    if isinstance(goal, Var):
        raise GoalRejected(f"a variable ({goal.name}) cannot be called as a goal")
    if not isinstance(goal, (Atom, Compound)):
        raise GoalRejected(f"{show(goal)} is not a goal")
    name = goal.name
    args = goal.args if isinstance(goal, Compound) else ()
    key = (name, len(args))
    if key in kb_predicates:
        return
    if key in CONTROL:
        for index in CONTROL[key]:
            check_goal(args[index], kb_predicates)
        return
    if key in PURE:
        return
    known = sorted(f"{n}/{a}" for n, a in kb_predicates if n == name)
    hint = f" (the KB defines {', '.join(known)})" if known else ""
    raise GoalRejected(f"{name}/{len(args)} is neither a predicate of the KB nor an allowed pure builtin{hint}",
                       text=show(goal))
