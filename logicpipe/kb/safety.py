"""Which builtins a goal from a model (or a command line) may call, besides the KB's own predicates.

The list goes to SWI-Prolog with the load request; guard.pl checks every goal against it where it runs
(and library(sandbox) checks it again). Arguments in data positions are data and may hold any term.
"""

from __future__ import annotations

from ..core.errors import ProgramParseError

# Control constructs and all-solutions builtins: their goal arguments are checked as goals (which
# arguments those are, SWI-Prolog's meta_predicate declarations say: guard.pl reads them).
CONTROL = {
    (",", 2), (";", 2), ("->", 2), ("*->", 2), ("\\+", 1), ("not", 1), ("call", 1), ("once", 1), ("ignore", 1),
    ("findall", 3), ("findall", 4), ("forall", 2), ("aggregate_all", 3), ("aggregate_all", 4), ("bagof", 3),
    ("setof", 3), ("catch", 3), ("aggregate", 3), ("limit", 2), ("distinct", 2), ("call_nth", 2),
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
    ("atomic_list_concat", 2), ("atomic_list_concat", 3), ("split_string", 4), ("term_variables", 2),
    ("=@=", 2), ("string_code", 3), ("char_type", 2), ("unify_with_occurs_check", 2), ("cyclic_term", 1),
    ("numbervars", 3), ("term_string", 2), ("pairs_keys_values", 3), ("list_to_assoc", 2),
}


# Meta-predicates whose argument is a closure, called with more arguments (checked when it is called).
CLOSURES = {
    *(("call", n) for n in range(2, 9)), *(("maplist", n) for n in range(2, 7)), *(("foldl", n) for n in range(4, 7)),
    ("include", 3), ("exclude", 3), ("partition", 4),
}


def allowed_builtins() -> set[tuple[str, int]]:
    """Every builtin a model's goal may call: what the whitelist in guard.pl allows."""
    return PURE | CONTROL | CLOSURES


class GoalRejected(ProgramParseError):
    """A goal calls something that is neither a KB predicate nor a whitelisted pure builtin, or that
    library(sandbox) refuses."""
