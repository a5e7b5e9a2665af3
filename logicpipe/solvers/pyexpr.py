"""Python-syntax expressions from LLM programs, parsed with `ast` and checked against a whitelist.

Nothing here evaluates code: solvers walk the returned tree and give each allowed node its meaning.
"""

from __future__ import annotations

import ast
import re

from ..errors import ProgramParseError

# Node types every expression language here may use; solvers widen the set as their grammar needs.
BASE_NODES: frozenset[type] = frozenset({
    ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub, ast.UAdd,
    ast.BinOp, ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod,
    ast.Compare, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.In, ast.NotIn,
    ast.Name, ast.Load, ast.Constant, ast.Call, ast.List, ast.Tuple,
})

_SCOPE = re.compile(r"(?<=\()(\s*)\[(?=\s*\w+\s*:)")


def mark_scopes(text: str) -> str:
    """`ForAll([x:s], ...)` is not Python; `ForAll(_[x:s], ...)` is (a subscript of slices), and it
    keeps every later column but one where it was."""
    return _SCOPE.sub(r"\1_[", text)


def parse_expression(
    text: str,
    line: int | None,
    nodes: frozenset[type] = BASE_NODES,
    calls: frozenset[str] | None = None,
) -> ast.expr:
    """Parse one expression; reject any node type outside `nodes` and any call whose target is not a
    plain name in `calls` (None: any plain name) with a ProgramParseError giving line and column."""
    source = text.strip()
    if not source:
        raise ProgramParseError("empty expression", line)
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as exc:
        raise ProgramParseError(f"syntax error: {exc.msg}", line, exc.offset, source) from None
    for node in ast.walk(tree):
        column = getattr(node, "col_offset", None)
        column = column + 1 if column is not None else None
        if type(node) not in nodes:
            raise ProgramParseError(f"'{_describe(node)}' is not allowed here", line, column, source)
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name):
                raise ProgramParseError("only plain function names may be called", line, column, source)
            if calls is not None and node.func.id not in calls:
                raise ProgramParseError(f"unknown function '{node.func.id}'", line, column, source)
            if node.keywords:
                raise ProgramParseError("keyword arguments are not allowed", line, column, source)
        if isinstance(node, ast.Name) and node.id.startswith("__"):
            raise ProgramParseError(f"name '{node.id}' is not allowed", line, column, source)
        if isinstance(node, ast.Constant) and not isinstance(node.value, (int, str, bool)):
            raise ProgramParseError(f"constant {node.value!r} is not allowed", line, column, source)
    return tree.body


def _describe(node: ast.AST) -> str:
    names = {
        ast.Attribute: "attribute access", ast.Lambda: "lambda", ast.Subscript: "indexing",
        ast.ListComp: "list comprehension", ast.GeneratorExp: "generator expression",
        ast.NamedExpr: ":=", ast.Starred: "*", ast.Await: "await", ast.Dict: "dict", ast.Set: "set",
        ast.JoinedStr: "f-string", ast.IfExp: "conditional expression", ast.Div: "/", ast.Pow: "**",
    }
    return names.get(type(node), type(node).__name__)

