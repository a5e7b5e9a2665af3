"""LogicLLaMA's string-level scores for one formula against its gold formula, as its authors define them
(Yang et al., arXiv 2305.15541, their `metrics.py` and `fol_parser.py`), written here anew:

- **LE** (logical equivalence by truth table): the quantifiers are dropped, each distinct literal (an atom
  as written, `Student(x)`) is a propositional input, the shorter side's inputs are padded with dummies,
  and the model's inputs are bound to the gold's in greedy order of edit distance (up to 1000 bindings);
  the score is the best binding's share of truth-table rows on which both formulas agree. A formula that
  does not parse scores 0.
- **BLEU** on the formula text, tokenised their way (`msplit`: operators and parentheses are tokens, a run
  of multi-character words is one token), up to 4-grams (fewer for short formulas), with the brevity
  penalty and no smoothing, as Hugging Face `evaluate`'s "bleu" computes it.

Neither is a proof: the docs (faithfulness.md) show where they and Prover9 disagree.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any

from ...solvers.fol_parser import Bin, Eq, Not, Pred, Quant
from .logic import show

TOP_N = 1000  # bindings tried, as the authors' find_best_LE_score(top_n=1000)
# Beyond this many inputs the truth table (2^n rows) is not built and LE is undefined (None).
MAX_INPUTS = 16
_DUMMY = "#DUMMY"
_DUMMY_DISTANCE = 10000
_OPERATORS = ["⊕", "∨", "∧", "→", "↔", "∀", "∃", "¬", "(", ")", ","]
_SYMBOL = re.compile(r"[^⊕∨∧→↔∀∃¬(),]+")


def tokens(text: str) -> list[str]:
    """The authors' msplit: operators spaced out, quotes dropped, a run of multi-character words joined
    (capitalised) into one token."""
    for op in _OPERATORS:
        text = text.replace(op, f" {op} ")
    words = [w.replace("'", "") for w in text.split()]
    words = [w for w in words if w]
    out: list[str] = []
    run: list[str] = []
    for word in words:
        if len(word) > 1 and _SYMBOL.match(word):
            run.append(word[0].upper() + word[1:])
        else:
            out.extend([("".join(run)), word] if run else [word])
            run = []
    if run:
        out.append("".join(run))
    return out


def bleu(predicted: str, gold: str) -> float:
    """BLEU of one formula against one reference, max order min(4, the shorter's token count)."""
    hyp, ref = tokens(predicted), tokens(gold)
    order = min(4, len(hyp), len(ref))
    if order == 0:
        return 0.0
    precisions = []
    for n in range(1, order + 1):
        hyp_grams = Counter(tuple(hyp[i:i + n]) for i in range(len(hyp) - n + 1))
        ref_grams = Counter(tuple(ref[i:i + n]) for i in range(len(ref) - n + 1))
        overlap = sum((hyp_grams & ref_grams).values())
        possible = len(hyp) - n + 1
        precisions.append(overlap / possible if possible > 0 else 0.0)
    if min(precisions) == 0:
        return 0.0
    mean = math.exp(sum(math.log(p) for p in precisions) / order)
    ratio = len(hyp) / len(ref)
    penalty = 1.0 if ratio > 1.0 else math.exp(1 - 1 / ratio)
    return mean * penalty


def _literal(node: Any) -> str:
    return show(node).replace(" ", "")


def _inputs(node: Any, found: dict[str, None]) -> None:
    if isinstance(node, (Pred, Eq)):
        found.setdefault(_literal(node), None)
    elif isinstance(node, (Not, Quant)):
        _inputs(node.body, found)
    elif isinstance(node, Bin):
        _inputs(node.left, found)
        _inputs(node.right, found)


def _table(node: Any, columns: dict[str, int], width: int) -> int:
    """The formula's truth-table column as a bit set over 2^width rows (quantifiers dropped)."""
    full = (1 << (1 << width)) - 1
    if isinstance(node, (Pred, Eq)):
        return columns[_literal(node)]
    if isinstance(node, Quant):
        return _table(node.body, columns, width)
    if isinstance(node, Not):
        return full ^ _table(node.body, columns, width)
    left, right = _table(node.left, columns, width), _table(node.right, columns, width)
    if node.op == "and":
        return left & right
    if node.op == "or":
        return left | right
    if node.op == "xor":
        return left ^ right
    if node.op == "imp":
        return (full ^ left) | right
    return full ^ (left ^ right)


def _column(index: int, width: int) -> int:
    """Input `index`'s truth values over the rows of itertools.product([False, True], repeat=width)."""
    bits = 0
    for row in range(1 << width):
        if (row >> (width - 1 - index)) & 1:
            bits |= 1 << row
    return bits


def _edit(a: str, b: str) -> int:
    if a.startswith(_DUMMY) or b.startswith(_DUMMY):
        return _DUMMY_DISTANCE
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def _bindings(gold: list[str], predicted: list[str]) -> Any:
    """The authors' greedy enumeration: for each gold input in turn, the unused model inputs nearest first."""
    used: list[int] = []

    def walk(index: int) -> Any:
        if index == len(gold):
            yield list(used)
            return
        order = sorted((i for i in range(len(predicted)) if i not in used), key=lambda i: _edit(gold[index], predicted[i]))
        for i in order:
            used.append(i)
            yield from walk(index + 1)
            used.pop()

    for count, binding in enumerate(walk(0)):
        yield binding
        if count + 1 == TOP_N:
            return


def le(predicted: Any, gold: Any) -> float | None:
    """LE of a parsed model formula against a parsed gold formula (None: too many literals to tabulate)."""
    gold_inputs: dict[str, None] = {}
    model_inputs: dict[str, None] = {}
    _inputs(gold, gold_inputs)
    _inputs(predicted, model_inputs)
    theirs, ours = list(gold_inputs), list(model_inputs)
    width = max(len(theirs), len(ours))
    if width > MAX_INPUTS:
        return None
    shorter = theirs if len(theirs) < width else ours
    shorter.extend(f"{_DUMMY}_{i}" for i in range(width - len(shorter)))
    columns = [_column(i, width) for i in range(width)]
    target = _table(gold, dict(zip(theirs, columns)), width)
    rows = 1 << width
    best = 0.0
    for binding in _bindings(theirs, ours):
        mine = _table(predicted, {ours[b]: columns[i] for i, b in enumerate(binding)}, width)
        agree = rows - bin(target ^ mine).count("1")
        best = max(best, agree / rows)
    return best
