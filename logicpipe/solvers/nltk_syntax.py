"""NLTK's first-order syntax as LINC writes it (`all x. (P(x) -> Q(x))`, `-`, `&`, `|`, `->`, `<->`,
`exists`, `=`, `!=`), parsed by our own parser into fol_parser's AST, which the FOL solver runs.

The reading is NLTK's own (nltk.sem.logic.LogicParser), ported rule for rule, because a LINC program
means what NLTK makes of it:
- binding strength, tightest first: `-`, `=`/`!=`, a quantifier, `&`, `|`, `->`, `<->`; every binary
  operator groups to the left, so `A -> B -> C` is `(A -> B) -> C`;
- a quantifier's body is as short as it can be: `all x. P(x) & Q(x)` is `(all x. P(x)) & Q(x)`;
- names after a quantifier up to the first reserved token are all bound (`all x y. R(x,y)`);
- a name that no quantifier binds is read as Prover9 reads NLTK's output: a variable when it starts
  with u to z (Prover9's convention; universally quantified over the formula), else a constant.
`⊕` (which LINC rewrites out of FOLIO's annotations, convert_to_nltk_rep) is read as exclusive or, just
looser than `|`. Lambda, iota and higher-order application are not first-order: a parse error.

`reformat_arguments` is LINC's `reformat_fol`, the one rewrite LINC applies to a generated formula
before NLTK reads it: inside the innermost parentheses, digits become words (`1990` -> `OneNineNineZero`),
`.` becomes `Dot`, `-` and spaces `_`, quotes go. LINC replaces each such argument everywhere in the
formula, so the rewrite can reach a predicate's name too; it is kept as LINC wrote it (a plain string
rewrite, no eval), since a replay means what LINC's code made of the text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, NoReturn

from ..core.errors import ProgramParseError
from .fol_parser import MAX_DEPTH, MAX_NESTING, Bin, Const, Eq, Func, Not, Pred, Quant, Var, depth, excerpt

# NLTK's operator tokens, longest first so `->` is not read as `-` then `>`.
_SYMBOLS = ("<->", "<=>", "->", "=>", "!=", "==", "\\", ".", "(", ")", ",", "-", "!", "&", "^", "|", "=", "⊕",
            "[", "]")
_WORDS = {"and": "AND", "or": "OR", "not": "NOT", "implies": "IMP", "iff": "IFF", "some": "EXISTS",
          "exists": "EXISTS", "exist": "EXISTS", "all": "ALL", "forall": "ALL", "iota": "IOTA", "lambda": "LAMBDA"}
_KIND = {"<->": "IFF", "<=>": "IFF", "->": "IMP", "=>": "IMP", "!=": "NEQ", "==": "EQ", "=": "EQ", "\\": "LAMBDA",
         ".": "DOT", "(": "LP", ")": "RP", ",": "COMMA", "-": "NOT", "!": "NOT", "&": "AND", "^": "AND", "|": "OR",
         "⊕": "XOR", "[": "LB", "]": "RB"}
_SPLIT = re.compile(r"(\s+|" + "|".join(re.escape(s) for s in _SYMBOLS) + ")")
# NLTK's precedence numbers (lower binds tighter); None is the top level.
_PRECEDENCE = {"NOT": 2, "APP": 3, "EQ": 4, "NEQ": 4, "ALL": 5, "EXISTS": 5, "AND": 6, "OR": 7, "XOR": 7.5,
               "IMP": 8, "IFF": 9, None: 10}
_BOOLEAN = {"AND": "and", "OR": "or", "XOR": "xor", "IMP": "imp", "IFF": "iff"}
# Prover9 reads a free name starting with u-z as a variable.
_PROVER9_VARIABLE = re.compile(r"^[u-z]")
# NLTK's individual variables (a-d, f-z, then digits): such a name cannot be a predicate.
_INDIVIDUAL = re.compile(r"^[a-df-z]\d*$")
_EVENT = re.compile(r"^e\d*$")
# What Prover9 reads as one name. NLTK passes any other character through to Prover9, which then fails
# (a `¬` in a name is a decoding error in LINC's run): a parse error here, never a silently odd name.
_NAME = re.compile(r"^(?:[A-Za-z0-9_$]+|\"[^\"]+\")$")

Token = tuple[str, str, int]  # kind, text, column (1-based)


def tokenize(text: str, line: int | None = None) -> list[Token]:
    tokens: list[Token] = []
    column = 1
    for piece in _SPLIT.split(text):
        if piece and not piece.isspace():
            kind = _KIND.get(piece) or _WORDS.get(piece, "NAME")
            if kind == "NAME" and not _NAME.match(piece):
                odd = next(c for c in piece if not _NAME.match(c))
                raise ProgramParseError(f"{odd!r} cannot be part of a name (letters, digits and _ only)", line,
                                        column, excerpt(text, column))
            tokens.append((kind, piece, column))
        column += len(piece)
    tokens.append(("END", "", column))
    return tokens


class _Parser:
    def __init__(self, text: str, line: int | None):
        self.text, self.line = text, line
        self.tokens = tokenize(text, line)
        self.index = 0
        self.nesting = 0
        self.bound: list[str] = []
        self.free: dict[str, None] = {}

    def peek(self) -> Token:
        return self.tokens[self.index]

    def take(self) -> Token:
        token = self.tokens[self.index]
        self.index += 1
        return token

    def fail(self, message: str, token: Token | None = None) -> NoReturn:
        token = token or self.peek()
        raise ProgramParseError(message, self.line, token[2], excerpt(self.text, token[2]))

    def formula(self, negated: bool = False) -> Any:
        node = self.formula_of(self.expression(None))
        if self.peek()[0] != "END":
            self.fail(f"unexpected {self.peek()[1]!r} after a complete formula")
        if negated:  # LINC negates the text, `-(C)`, before Prover9 closes its free variables
            node = Not(node)
        for name in reversed(self.free):  # Prover9 closes a formula's free variables universally
            node = Quant("all", name, node)
        if depth(node) > MAX_DEPTH:
            raise ProgramParseError(f"formula is more than {MAX_DEPTH} operators deep", self.line,
                                    text=excerpt(self.text, 1))
        return node

    def expression(self, context: str | None) -> Any:
        """NLTK's process_next_expression: one operand, then the operators that bind tighter than `context`."""
        self.nesting += 1
        if self.nesting > MAX_NESTING:
            self.fail("formula nests too deeply")
        try:
            token = self.take()
            node = self.handle(token)
            return self.adjuncts(node, context)
        finally:
            self.nesting -= 1

    def handle(self, token: Token) -> Any:
        kind = token[0]
        if kind == "NAME":
            return self.name(token)
        if kind == "NOT":
            return Not(self.formula_of(self.expression("NOT")))
        if kind in ("ALL", "EXISTS"):
            return self.quantified(token)
        if kind == "LP":
            node = self.expression(None)
            if self.peek()[0] != "RP":
                self.fail(f"expected ')' but found {self.peek()[1] or 'end of formula'!r}")
            self.take()
            return node
        if kind == "LB":
            return self.listed(token)
        if kind in ("LAMBDA", "IOTA"):
            self.fail(f"{token[1]!r} is not first-order logic", token)
        if kind == "END":
            self.fail("formula ends where an expression was expected", token)
        self.fail(f"expected an expression but found {token[1]!r}", token)

    def adjuncts(self, node: Any, context: str | None) -> Any:
        while True:
            kind = self.peek()[0]
            if kind in ("EQ", "NEQ") and _PRECEDENCE[kind] < _PRECEDENCE[context]:
                self.take()
                right = self.expression(kind)
                node = Eq(self.term(node), self.term(right))
                node = Not(node) if kind == "NEQ" else node
            elif kind == "LP" and _PRECEDENCE["APP"] < _PRECEDENCE[context]:
                self.fail("an expression applied to arguments is not first-order logic")
            elif kind in _BOOLEAN and _PRECEDENCE[kind] < _PRECEDENCE[context]:
                self.take()
                node = Bin(_BOOLEAN[kind], self.formula_of(node), self.formula_of(self.expression(kind)))
            else:
                return node

    def name(self, token: Token) -> Any:
        name = token[1]
        if self.peek()[0] != "LP":
            return ("name", name, token)  # a formula or a term: decided by where it stands
        if name in self.bound or _INDIVIDUAL.match(name) or _EVENT.match(name):
            self.fail(f"'{name}' is an illegal predicate name: a variable cannot take arguments", token)
        self.take()
        args = [self.term(self.expression("APP"))]
        while self.peek()[0] == "COMMA":
            self.take()
            args.append(self.term(self.expression("APP")))
        if self.peek()[0] != "RP":
            self.fail(f"expected ',' or ')' but found {self.peek()[1] or 'end of formula'!r}")
        self.take()
        return ("apply", name, tuple(args), token)

    def listed(self, token: Token) -> Any:
        """`[a, b, c]`: NLTK passes it on whole, and Prover9 reads it as its list term `$cons(a, $cons(b,
        $cons(c, $nil)))`, so a list counts as one argument."""
        items = []
        if self.peek()[0] != "RB":
            items.append(self.term(self.expression("APP")))
            while self.peek()[0] == "COMMA":
                self.take()
                items.append(self.term(self.expression("APP")))
        if self.peek()[0] != "RB":
            self.fail(f"expected ',' or ']' but found {self.peek()[1] or 'end of formula'!r}")
        self.take()
        node: Any = Const("$nil")
        for item in reversed(items):
            node = Func("$cons", (item, node))
        return ("term", node, token)

    def quantified(self, token: Token) -> Any:
        names = []
        while self.peek()[0] == "NAME":
            names.append(self.take()[1])
        if not names:
            self.fail(f"expected a variable after {token[1]!r}")
        if self.peek()[0] == "DOT":
            self.take()
        self.bound.extend(names)
        body = self.formula_of(self.expression(token[0]))
        del self.bound[-len(names):]
        for name in reversed(names):
            body = Quant("all" if token[0] == "ALL" else "exists", name, body)
        return body

    def term(self, node: Any) -> Any:
        """An operand in a term's place: a name (variable or constant) or a function application."""
        if isinstance(node, tuple) and node[0] == "name":
            name = node[1]
            if name in self.bound:
                return Var(name)
            if _PROVER9_VARIABLE.match(name):
                self.free[name] = None
                return Var(name)
            return Const(name)
        if isinstance(node, tuple) and node[0] == "apply":
            return Func(node[1], node[2])
        if isinstance(node, tuple) and node[0] == "term":
            return node[1]
        self.fail("a formula stands where a term (a name or a function of terms) was expected")

    def formula_of(self, node: Any) -> Any:
        """An operand in a formula's place: an application is a predicate, a bare name a proposition."""
        if isinstance(node, tuple) and node[0] == "apply":
            return Pred(node[1], node[2])
        if isinstance(node, tuple) and node[0] == "name":
            if node[1] in self.bound or _PROVER9_VARIABLE.match(node[1]):
                self.fail(f"variable '{node[1]}' used as a formula", node[2])
            return Pred(node[1], ())
        if isinstance(node, tuple) and node[0] == "term":
            self.fail("a list stands where a formula was expected", node[2])
        return node


def parse_nltk(text: str, line: int | None = None, negated: bool = False) -> Any:
    """One formula in NLTK's syntax, as fol_parser's AST; ProgramParseError for what NLTK would not read.
    `negated`: the formula `-(text)`, as LINC writes a conclusion's negation: with a free variable it is
    `all x. -C(x)`, not `-(all x. C(x))`."""
    return _Parser(text.strip(), line).formula(negated)


# LINC's reformat_fol (eval/tasks/utils.py), applied to each generated formula before it is read.
_ARGUMENTS = re.compile(r"\([^()]+\)")
_ARGUMENT_MAP = (("0", "Zero"), ("1", "One"), ("2", "Two"), ("3", "Three"), ("4", "Four"), ("5", "Five"),
                 ("6", "Six"), ("7", "Seven"), ("8", "Eight"), ("9", "Nine"), (".", "Dot"), ("’", ""), ("-", "_"),
                 ("'", ""), (" ", "_"))


def reformat_arguments(formula: str) -> str:
    """LINC's reformat_fol: each argument of the innermost parentheses spelt without digits, dots, dashes,
    quotes or spaces, and replaced so wherever it occurs in the formula (LINC iterates a set, so when one
    argument contains another the order matters; here the longer goes first, which LINC's set order
    usually but not always gives)."""
    arguments: set[str] = set()
    for group in _ARGUMENTS.findall(formula):
        arguments.update(part.strip() for part in group[1:-1].split(","))
    for argument in sorted(arguments, key=lambda a: (-len(a), a)):
        spelt = argument
        for old, new in _ARGUMENT_MAP:
            spelt = spelt.replace(old, new)
        formula = formula.replace(argument, spelt)
    return formula


# A LINC program: `TEXT:`/`FOL:` line pairs; every `FOL:` formula but the last is a premise, the last is
# the conclusion. Generation stops at `</EVALUATE>` (LINC's stop word).
_FOL_FLAG, _TEXT_FLAG, _STOP = "FOL:", "TEXT:", "</EVALUATE>"


def is_linc_program(text: str) -> bool:
    """Whether a program is written in LINC's form (a `FOL:` line) rather than Logic-LM's sections."""
    return any(line.lstrip().startswith(_FOL_FLAG) for line in text.split("\n"))


@dataclass
class LincProgram:
    premises: list[tuple[Any, str]]
    conclusion: tuple[Any, str]
    negation: Any  # what proves the conclusion false: `-(C)` read as LINC reads it


def linc_program(text: str) -> LincProgram:
    """A LINC program read as LINC's postprocess_generation reads it: every line holding `FOL:` (anywhere,
    the flag removed) up to `</EVALUATE>`; the last is the conclusion. Each formula's TEXT line (else the
    formula) comes with it. A symbol used with two arities, or as a predicate and a function, is a parse
    error: Prover9 refuses such input, so LINC's code gave no verdict (this check keeps that reading while
    our Prover9 translation would otherwise tell the uses apart)."""
    formulas: list[tuple[Any, str, int]] = []
    note = None
    last = ""
    for number, line in enumerate(text.split(_STOP)[0].split("\n"), start=1):
        if _TEXT_FLAG in line and _FOL_FLAG not in line:
            note = line.replace(_TEXT_FLAG, "").strip()
        elif _FOL_FLAG in line:
            code = line.replace(_FOL_FLAG, "").strip()
            if not code:
                raise ProgramParseError("empty FOL: line", number)
            last = reformat_arguments(code)
            formulas.append((parse_nltk(last, number), note or code, number))
            note = None
    if not formulas:
        raise ProgramParseError("no 'FOL:' line: a LINC program is TEXT:/FOL: line pairs, the last the conclusion")
    if len(formulas) < 2:
        raise ProgramParseError("one 'FOL:' line only: a LINC program needs premises before its conclusion")
    _check_symbols(formulas)
    *premises, (conclusion, note, number) = formulas
    return LincProgram([(f, n) for f, n, _ in premises], (conclusion, note or ""),
                       parse_nltk(last, number, negated=True))


def _check_symbols(formulas: list[tuple[Any, str, int]]) -> None:
    """Prover9's two refusals of a symbol (its name stands for one symbol whatever its arity or kind)."""
    arities: dict[str, dict[int, int]] = {}  # name -> arity -> first line
    kinds: dict[tuple[str, int], dict[str, int]] = {}  # (name, arity) -> relation/function -> first line
    for formula, _, number in formulas:
        stack = [formula]
        while stack:
            node = stack.pop()
            if isinstance(node, (Pred, Func, Const)):
                arity = len(node.args) if isinstance(node, (Pred, Func)) else 0
                arities.setdefault(node.name, {}).setdefault(arity, number)
                kind = "relation" if isinstance(node, Pred) else "function"
                kinds.setdefault((node.name, arity), {}).setdefault(kind, number)
                stack.extend(node.args if isinstance(node, (Pred, Func)) else ())
            elif isinstance(node, (Not, Quant)):
                stack.append(node.body)
            elif isinstance(node, (Bin, Eq)):
                stack.extend((node.left, node.right))
    for name, found in arities.items():
        if len(found) > 1:
            shown = ", ".join(f"{arity} (line {line})" for arity, line in sorted(found.items()))
            raise ProgramParseError(f"'{name}' is used with several arities: {shown}; Prover9 (and so LINC) "
                                    "refuses a symbol used with more than one", max(found.values()))
    for (name, arity), uses in kinds.items():
        if len(uses) > 1:
            raise ProgramParseError(f"'{name}' (arity {arity}) is used as a predicate (line {uses['relation']}) and "
                                    f"as a {'constant' if arity == 0 else 'function'} (line {uses['function']}); "
                                    "Prover9 (and so LINC) refuses a symbol used as both", max(uses.values()))


# LINC's convert_to_nltk_rep (eval/tasks/utils.py): how LINC turns FOLIO's annotations (Logic-LM's
# notation: ∀ ∃ → ∧ ∨ ¬ ⊕) into NLTK's syntax, for its few-shot examples and to choose its problems.
_SYMBOL_MAP = (("∀", "all "), ("∃", "exists "), ("→", "->"), ("¬", "-"), ("∧", "&"), ("∨", "|"), ("⟷", "<->"),
               ("↔", "<->"), ("0", "Zero"), ("1", "One"), ("2", "Two"), ("3", "Three"), ("4", "Four"), ("5", "Five"),
               ("6", "Six"), ("7", "Seven"), ("8", "Eight"), ("9", "Nine"), (".", "Dot"), ("Ś", "S"), ("ą", "a"),
               ("’", ""))
_LOWER_CONSTANT = re.compile(r"\b([a-z]{2,})(?!\()")
_QUANTIFIED = re.compile(r"(all\s|exists\s)([a-z])")
_DOTTED = re.compile(r"([a-z])\.(?=[a-z])")
_SIMPLE_XOR = re.compile(r"(\w+\([^()]*\)) ⊕ (\w+\([^()]*\))")
_COMPLEX_XOR = re.compile(r"\((.*?)\)\) ⊕ \((.*?)\)\)")
_SPECIAL_XOR = re.compile(r"\(\(\((.*?)\)\)\) ⊕ (\w+\([^()]*\))")


def convert_annotation(formula: str) -> str:
    """LINC's convert_to_nltk_rep, rewrite for rewrite (plain string rewrites, in LINC's order): lowercase
    names capitalised, symbols spelt, digits as words, `.` as `Dot`, a dot after each quantified variable,
    and three patterns of `⊕` expanded into `&`/`|` (a `⊕` they miss stays, and the parser reads it)."""
    formula = _LOWER_CONSTANT.sub(lambda m: m.group(1).capitalize(), formula)
    for old, new in _SYMBOL_MAP:
        formula = formula.replace(old, new)
    formula = _QUANTIFIED.sub(lambda m: m.group(1) + m.group(2) + ".", formula)
    formula = _DOTTED.sub(lambda m: m.group(1), formula)
    formula = _SIMPLE_XOR.sub(lambda m: f"(({m[1]} & -{m[2]}) | (-{m[1]} & {m[2]}))", formula)
    formula = _COMPLEX_XOR.sub(lambda m: f"((({m[1]})) & -({m[2]}))) | (-({m[1]})) & ({m[2]}))))", formula)
    return _SPECIAL_XOR.sub(lambda m: f"((({m[1]})) & -{m[2]}) | (-({m[1]})) & {m[2]})", formula)
