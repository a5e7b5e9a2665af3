"""Python-syntax expressions from LLM programs, parsed with `ast` and checked against a whitelist.

Nothing here evaluates code: solvers walk the returned tree and give each allowed node its meaning.
"""

from __future__ import annotations

import ast
import re
import warnings

from ..core.errors import ProgramParseError

# Node types every expression language here may use; solvers widen the set as their grammar needs.
BASE_NODES: frozenset[type] = frozenset({
    ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub, ast.UAdd,
    ast.BinOp, ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod,
    ast.Compare, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.In, ast.NotIn,
    ast.Name, ast.Load, ast.Constant, ast.Call, ast.List, ast.Tuple,
})

# Integers stay within 64 bits so that every value a solver reports can be written and read back as JSON.
INT_BOUND = 2**63
# The solvers walk trees recursively; a bound far below Python's recursion limit keeps them safe.
MAX_DEPTH = 100

# Where Python's tokenizer may warn (a backslash escape, a number run into a word): only there is the
# parse wrapped in a warnings filter, which costs more than the parse of a short expression.
_HINTED = re.compile(r"\\|\d[^\W\d]")
_SCOPE = re.compile(r"(?<=\()(\s*)\[(?=\s*\w+\s*:)")
_MARKED_SCOPE = re.compile(r"(?<!\w)_\[")

# The source symbol of each operator node, and what to write instead where the language has it.
_SYMBOLS: dict[type, str] = {
    ast.BitOr: "|", ast.BitAnd: "&", ast.BitXor: "^", ast.Invert: "~", ast.LShift: "<<", ast.RShift: ">>",
    ast.MatMult: "@", ast.Div: "/", ast.Pow: "**", ast.Is: "is", ast.IsNot: "is not",
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//", ast.Mod: "%",
    ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
    ast.In: "in", ast.NotIn: "not in", ast.And: "and", ast.Or: "or", ast.Not: "not",
    ast.USub: "-", ast.UAdd: "+",
}
_INSTEAD = {ast.BitOr: "or", ast.BitAnd: "and", ast.Invert: "not", ast.Div: "//", ast.Is: "==",
            ast.IsNot: "!="}
_CONSTRUCTS = {
    ast.Attribute: "attribute access", ast.Lambda: "lambda", ast.Subscript: "indexing",
    ast.ListComp: "list comprehension", ast.GeneratorExp: "generator expression",
    ast.SetComp: "set comprehension", ast.DictComp: "dict comprehension",
    ast.NamedExpr: ":=", ast.Starred: "*", ast.Await: "await", ast.Dict: "dict", ast.Set: "set",
    ast.JoinedStr: "f-string", ast.IfExp: "conditional expression", ast.Slice: "slice",
}


def mark_scopes(text: str) -> str:
    """`ForAll([x:s], ...)` is not Python; `ForAll(_[x:s], ...)` is (a subscript of slices), and it
    keeps every later column but one where it was."""
    return _SCOPE.sub(r"\1_[", text)


def symbol(op: ast.AST) -> str:
    """How an operator node is written in source."""
    return _SYMBOLS.get(type(op), type(op).__name__)


def source(node: ast.AST) -> str:
    """A node as the program wrote it (scopes unmarked), clipped for messages."""
    return clip(_MARKED_SCOPE.sub("[", ast.unparse(node)))


def clip(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


# Trees of expressions already parsed and accepted, by text and rules: a solver worker meets the same
# domain list or comparison in program after program (LogicalDeduction's 3,618 expressions are 899
# texts). Callers only read the trees. Emptied when full, so it stays small.
_PARSED: dict[tuple[str, frozenset[type], frozenset[str] | None], ast.expr] = {}
_PARSED_MAX = 4096


def parse_expression(
    text: str,
    line: int | None,
    nodes: frozenset[type] = BASE_NODES,
    calls: frozenset[str] | None = None,
) -> ast.expr:
    """Parse one expression; reject any node type outside `nodes`, any call whose target is not a
    plain name in `calls` (None: any plain name), constants that are not small integers, strings or
    booleans, and trees deeper than MAX_DEPTH, with a ProgramParseError giving line and column. The
    tree is shared with every caller of the same text: read it, never change it."""
    key = (text, nodes, calls)
    tree = _PARSED.get(key)
    if tree is None:
        tree = _parse(text, line, nodes, calls)
        if len(_PARSED) >= _PARSED_MAX:
            _PARSED.clear()
        _PARSED[key] = tree
    return tree


def _parse(text: str, line: int | None, nodes: frozenset[type], calls: frozenset[str] | None) -> ast.expr:
    source_text = text.strip()
    if not source_text:
        raise ProgramParseError("empty expression", line)
    shown = clip(source_text)
    try:
        if _HINTED.search(source_text) is None:
            tree = ast.parse(source_text, mode="eval")
        else:
            with warnings.catch_warnings():  # Python's own hints (invalid escapes, "1x") are not for the user
                warnings.simplefilter("ignore", SyntaxWarning)
                warnings.simplefilter("ignore", DeprecationWarning)  # an invalid escape, before Python 3.12
                tree = ast.parse(source_text, mode="eval")
    except SyntaxError as exc:
        raise ProgramParseError(f"syntax error: {exc.msg}", line, exc.offset, shown) from None
    except (RecursionError, MemoryError):
        raise ProgramParseError("expression nests too deeply to parse", line, text=shown) from None
    # Walked level by level, not recursively, so that a deep tree is reported rather than crashing here.
    level: list[ast.AST] = [tree]
    for _depth in range(MAX_DEPTH):
        below: list[ast.AST] = []
        for node in level:
            kind = type(node)
            if kind not in nodes or kind in _INSPECTED:
                _check_node(node, tree, line, shown, nodes, calls)
            if kind is not ast.Name:  # a name's only child is its Load context
                for name in node._fields:  # ast.iter_child_nodes, without its generator
                    child = getattr(node, name, None)
                    if isinstance(child, ast.AST):
                        below.append(child)
                    elif isinstance(child, list):
                        below.extend(item for item in child if isinstance(item, ast.AST))
        if not below:
            return tree.body
        level = below
    raise ProgramParseError(f"expression nests more than {MAX_DEPTH} levels deep; split it into smaller parts",
                            line, _column(level[0], tree), shown)


_INSPECTED = frozenset({ast.Call, ast.Name, ast.Constant})


def _column(node: ast.AST, tree: ast.AST) -> int | None:
    """1-based column of a node; operator nodes carry no position, so their expression's stands in."""
    offset = getattr(node, "col_offset", None)
    if offset is not None:
        return offset + 1
    parent = next((p for p in ast.walk(tree) if node in list(ast.iter_child_nodes(p))), None)
    return _column(parent, tree) if parent is not None else None


def _check_node(node: ast.AST, tree: ast.AST, line: int | None, shown: str,
                nodes: frozenset[type], calls: frozenset[str] | None) -> None:
    def fail(message: str) -> ProgramParseError:
        return ProgramParseError(message, line, _column(node, tree), shown)

    if type(node) not in nodes:
        instead = _INSTEAD.get(type(node))
        hint = f" (write '{instead}')" if instead else ""
        raise fail(f"'{_describe(node)}' is not allowed here{hint}")
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name):
            raise fail("only plain function names may be called")
        if calls is not None and node.func.id not in calls:
            raise fail(f"unknown function '{node.func.id}'")
        if node.keywords:
            raise fail("keyword arguments are not allowed")
    elif isinstance(node, ast.Name):
        if node.id.startswith("__"):
            raise fail(f"name '{node.id}' is not allowed")
    elif isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool):
            return
        if isinstance(value, int):
            if not -INT_BOUND < value < INT_BOUND:
                # str() refuses integers past 4,300 digits; hex() does not.
                digits = str(value) if value.bit_length() < 10_000 else hex(value)
                raise fail(f"integer {clip(digits, 24)} is out of range (at most 2**63 - 1 in size)")
        elif isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise fail(f"string {value!r} is not valid Unicode (a lone surrogate escape)") from None
        else:
            raise fail(f"constant {clip(repr(value), 40)} is not allowed")


def _describe(node: ast.AST) -> str:
    if type(node) in _SYMBOLS:
        return symbol(node)
    return _CONSTRUCTS.get(type(node), type(node).__name__)
