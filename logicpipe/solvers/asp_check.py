"""Reading an ASP program as data before clingo sees it: a whitelist over its text, then over clingo's
syntax tree. Nothing a model writes may run code or read a file, so `#script` (Python, Lua), `#include`,
`#external`, `@`-terms (calls into the host language) and every directive not listed are refused here.

Two layers, because each closes a hole of the other: clingo's parser itself opens the file an
`#include` names, so includes (and every other unlisted directive) are refused in the text before any
parsing; the syntax tree then refuses any node of a kind not listed, and any external (`@`) function,
however it was spelt.
"""

from __future__ import annotations

import re
from typing import Any

from ..core.errors import ProgramParseError

# Directives and aggregate names a program may use (after '#'); `#sum+` is `#sum` then '+'.
DIRECTIVES = frozenset({"show", "const", "minimize", "maximize", "minimise", "maximise", "count", "sum",
                        "min", "max", "inf", "sup", "infimum", "supremum", "true", "false"})
# The kinds of syntax-tree node a program may hold (clingo.ast.ASTType names): rules, constraints,
# choice and disjunctive heads, aggregates, weak constraints, #show, #const and comments.
NODES = frozenset({"Program", "Rule", "Literal", "SymbolicAtom", "Function", "Variable", "SymbolicTerm",
                   "UnaryOperation", "BinaryOperation", "Interval", "Pool", "Comparison", "Guard",
                   "BooleanConstant", "BodyAggregate", "BodyAggregateElement", "Aggregate",
                   "ConditionalLiteral", "HeadAggregate", "HeadAggregateElement", "Disjunction",
                   "ShowSignature", "ShowTerm", "Minimize", "Definition", "Comment"})
# Predicates logicpipe adds to a program to explain it (asp.py); a program may not define them.
RESERVED = "lp_support_"
MAX_PROGRAM_CHARS = 100_000
# Nodes of a syntax tree walked at most (a wide program is refused rather than walked for long); the
# walk is iterative, so no depth of nesting reaches Python's recursion limit.
MAX_NODES = 200_000
# A non-ASCII character outside a string or comment is no part of any ASP token, and clingo's lexer
# reports it by its first byte, a message that is not UTF-8: clingo's Python binding fails to decode it
# inside its logger callback and aborts the whole process. So it is refused here, before clingo reads it.
_TOKEN = re.compile(r'%\*.*?\*%|%[^\n]*|"(?:\\.|[^"\\\n])*"|#\s*([A-Za-z_]\w*)|@\s*[a-z_]|[^\x00-\x7f]', re.S)
_CLINGO_MESSAGE = re.compile(r"^<[^>]*>:(\d+):(\d+)(?:-\d+(?::\d+)?)?:\s*(?:error:\s*)?(.*)$")


def _where(text: str, offset: int) -> tuple[int, int, str]:
    line = text.count("\n", 0, offset) + 1
    start = text.rfind("\n", 0, offset) + 1
    end = text.find("\n", offset)
    return line, offset - start + 1, text[start:end if end >= 0 else len(text)]


def check_text(text: str) -> None:
    """Refuse unlisted directives and `@`-terms outside comments and strings (before clingo parses)."""
    if len(text) > MAX_PROGRAM_CHARS:
        raise ProgramParseError(f"the program is longer than {MAX_PROGRAM_CHARS} characters")
    if "\x00" in text:  # clingo reads a C string: it would stop at the NUL and run only what precedes it
        offset = text.index("\x00")
        line, column, source = _where(text, offset)
        raise ProgramParseError("a NUL character: clingo would stop reading the program there", line, column,
                                source.replace("\x00", "\\x00"))
    for match in _TOKEN.finditer(text):
        token = match.group(0)
        if token.startswith(("%", '"')):
            continue
        line, column, source = _where(text, match.start())
        if token.startswith("@"):
            raise ProgramParseError("@-terms (calls into Python or Lua) are not allowed", line, column, source)
        if not token.isascii():
            raise ProgramParseError(f"unexpected character {token!r}: ASP names and operators are ASCII", line,
                                    column, source)
        name = match.group(1)
        if name not in DIRECTIVES:
            raise ProgramParseError(f"#{name} is not allowed; a program may use #{', #'.join(sorted(DIRECTIVES))}",
                                    line, column, source)


def parse_error(messages: list[str], text: str) -> ProgramParseError:
    """clingo's first error message as a located parse error (refinement shows it to the model)."""
    lines = text.splitlines()
    for message in messages:
        first = message.strip().splitlines()[0] if message.strip() else ""
        found = _CLINGO_MESSAGE.match(first)
        if found is not None:
            line, column = int(found.group(1)), int(found.group(2))
            source = lines[line - 1] if 0 < line <= len(lines) else None
            return ProgramParseError(f"clingo: {found.group(3)}", line, column, source)
    return ProgramParseError(f"clingo: {' '.join(messages).strip() or 'syntax error'}")


def check_tree(statements: list[Any], text: str) -> None:
    """Refuse any node of an unlisted kind, any external function and any `#program` part but base."""
    from clingo.ast import AST

    lines = text.splitlines()
    stack: list[Any] = list(reversed(statements))
    seen = 0
    while stack:
        node = stack.pop()
        if not isinstance(node, AST):
            if isinstance(node, (list, tuple)) or type(node).__name__ == "ASTSequence":
                stack.extend(reversed(list(node)))
            continue
        seen += 1
        if seen > MAX_NODES:
            raise ProgramParseError(f"the program has more than {MAX_NODES} syntax nodes")
        kind = node.ast_type.name
        refused = ""
        if kind not in NODES:
            refused = f"{kind} statements are not allowed"
        elif kind == "Function" and node.external:
            refused = "@-terms (calls into Python or Lua) are not allowed"
        elif kind == "Function" and node.name.startswith(RESERVED):
            refused = f"names starting with {RESERVED} are reserved for logicpipe"
        elif kind == "Program" and (node.name != "base" or len(node.parameters)):
            refused = "#program parts are not allowed"
        if refused:
            line = node.location.begin.line
            raise ProgramParseError(refused, line, node.location.begin.column,
                                    lines[line - 1] if 0 < line <= len(lines) else None)
        stack.extend(reversed([getattr(node, key) for key in node.child_keys]))
