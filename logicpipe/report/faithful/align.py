"""Which model premise stands for which gold premise, and which model name stands for which gold name.

Premises are grouped by their sentences (Logic-LM's `::: sentence` comments against the dataset's premise
sentences): a model premise joins the closest gold sentence when close enough, or every gold sentence its
comment contains; a split sentence makes a group of two model premises, a merged one a group of two gold. Names are mapped one-to-one, kind and arity kept: first by a score of name similarity
and of co-occurrence in paired premises, then improved one move at a time (a name moved to another gold
name, or two swapped) while the move makes more paired formulas equivalent; a name that matches its gold
name stays (PINNED). A model name left unmapped
keeps a spelling no gold name has, so it can never be taken for one.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from difflib import SequenceMatcher
from typing import Any

from ...solvers.fol_worlds import constants
from .logic import predicates

# Sentences closer than this (difflib ratio on normalised text) stand for the same premise.
SENTENCE_MATCH = 0.6
# Moves the improvement step may evaluate per problem: it bounds the search, not the result's meaning.
MAX_MOVES = 400
# A model name this alike its gold name (the same words, give or take a plural) stays on it: the
# improvement step may not trade it away to make formulas agree, so names swapped in a whole program
# show as a failure rather than as a renaming.
PINNED = 0.9
UNMAPPED = "·model"  # appended to a model name no gold name was found for ('·' is no name character)

Mapping = dict[tuple[str, Any], Any]  # ("p", (name, arity)) -> (name, arity); ("c", name) -> name


def _normal(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


Group = tuple[tuple[int, ...], tuple[int, ...]]  # model premise indices, gold premise indices


def pair_sentences(model: list[str], gold: list[str]) -> list[Group]:
    """Groups of model premises and gold premises that state the same sentences: each model premise
    joins the gold premise whose sentence is closest (if close enough), or every gold premise whose
    sentence its comment contains (a merged premise); premises linked so form one group (a split one)."""
    normal_gold = [_normal(g) for g in gold]
    edges: list[tuple[int, int]] = []
    for i, text in enumerate(model):
        mine = _normal(text)
        inside = [j for j, g in enumerate(normal_gold) if g and g in mine]
        if len(inside) > 1:
            edges += [(i, j) for j in inside]
            continue
        scored = [(SequenceMatcher(None, mine, g).ratio(), j) for j, g in enumerate(normal_gold)]
        best = max(scored, default=(0.0, -1))
        if best[0] >= SENTENCE_MATCH:
            edges.append((i, best[1]))
    groups: list[tuple[set[int], set[int]]] = []
    for i, j in edges:
        joined = [g for g in groups if i in g[0] or j in g[1]]
        merged = ({i}, {j})
        for g in joined:
            merged[0].update(g[0])
            merged[1].update(g[1])
            groups.remove(g)
        groups.append(merged)
    return sorted((tuple(sorted(m)), tuple(sorted(g))) for m, g in groups)


def _words(name: str) -> list[str]:
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|_", " ", name)
    return [w for w in spaced.lower().split() if w not in ("is", "a", "an", "the", "has", "of")]


def similarity(a: str, b: str) -> float:
    """How alike two names are, 0..1: the better of character similarity and word overlap."""
    wa, wb = _words(a), _words(b)
    chars = SequenceMatcher(None, "".join(wa), "".join(wb)).ratio()
    overlap = len(set(wa) & set(wb)) / max(1, min(len(set(wa)), len(set(wb)))) if wa and wb else 0.0
    return max(chars, overlap)


def symbols(formulas: list[Any]) -> list[tuple[str, Any]]:
    """The ("p", (name, arity)) and ("c", name) symbols of the formulas, sorted."""
    preds = set().union(*(predicates(f) for f in formulas)) if formulas else set()
    consts = set().union(*(constants(f) for f in formulas)) if formulas else set()
    return sorted(("p", p) for p in preds) + sorted(("c", c) for c in consts)


def _fits(a: tuple[str, Any], b: tuple[str, Any]) -> bool:
    return a[0] == b[0] and (a[0] == "c" or a[1][1] == b[1][1])


def _name(symbol: tuple[str, Any]) -> str:
    return symbol[1][0] if symbol[0] == "p" else symbol[1]


def first_mapping(model: list[Any], gold: list[Any], pairs: list[Group]) -> Mapping:
    """One-to-one: matching names first, then by score (similarity, plus how often the two occur in
    paired formulas), best first."""
    ours, theirs = symbols(model), symbols(gold)
    together: dict[tuple, float] = {}
    for i, j in pairs:
        mine, gold_symbols = symbols([model[k] for k in i]), symbols([gold[k] for k in j])
        for a in mine:
            for b in gold_symbols:
                if _fits(a, b):
                    together[(a, b)] = together.get((a, b), 0.0) + 1.0 / len(gold_symbols)
    # Names that match (PINNED) first, whatever the co-occurrences say; then the rest by score.
    ranked = sorted(((similarity(_name(a), _name(b)), together.get((a, b), 0.0), a, b)
                     for a in ours for b in theirs if _fits(a, b)),
                    key=lambda t: (t[0] < PINNED, -(t[0] + t[1]), t[2], t[3]))
    scored = [(alike + often, a, b) for alike, often, a, b in ranked]
    mapping: Mapping = {}
    taken: set = set()
    for score, a, b in scored:
        if score < 0.34:  # neither alike nor ever together: better unmapped than mapped at random
            continue
        if a not in mapping and b not in taken:
            mapping[a] = b[1]
            taken.add(b)
    return mapping


def renaming(mapping: Mapping, model: list[Any]) -> tuple[dict[tuple[str, int], str], dict[str, str]]:
    """The rename maps for logic.rename: mapped names to gold names, the others marked as the model's."""
    preds: dict[tuple[str, int], str] = {}
    consts: dict[str, str] = {}
    for kind, symbol in symbols(model):
        target = mapping.get((kind, symbol))
        if kind == "p":
            preds[symbol] = target[0] if target else symbol[0] + UNMAPPED
        else:
            consts[symbol] = target if target else symbol + UNMAPPED
    return preds, consts


def _pinned(mapping: Mapping, symbol: tuple[str, Any]) -> bool:
    target = mapping.get(symbol)
    return target is not None and similarity(_name(symbol), target[0] if symbol[0] == "p" else target) >= PINNED


def improve(mapping: Mapping, model: list[Any], gold: list[Any], pairs: list[Group],
            agree: Callable[[Mapping, int], bool]) -> tuple[Mapping, int]:
    """Hill-climb: move one model name to another gold name of its kind (swapping with the name there)
    while that makes more paired formulas agree (`agree`: a cheap equivalence test), up to MAX_MOVES.
    Only names in paired formulas that disagree move, and only to names of their gold partner."""
    def score(candidate: Mapping) -> int:
        return sum(1 for index in range(len(pairs)) if agree(candidate, index))

    best, moves = score(mapping), 0
    improved = True
    while improved and moves < MAX_MOVES:
        improved = False
        for index, (i, j) in enumerate(pairs):
            if agree(mapping, index):
                continue
            gold_symbols = symbols([gold[k] for k in j])
            for a in symbols([model[k] for k in i]):
                if _pinned(mapping, a):
                    continue
                for b in gold_symbols:
                    if not _fits(a, b) or mapping.get(a) == b[1] or moves >= MAX_MOVES:
                        continue
                    candidate = dict(mapping)
                    holder = next((k for k, v in mapping.items() if k[0] == b[0] and v == b[1]), None)
                    if holder is not None and _pinned(mapping, holder):
                        continue
                    previous = candidate.pop(a, None)
                    if holder is not None:
                        candidate.pop(holder)
                        if previous is not None and _fits(holder, (a[0], previous)):
                            candidate[holder] = previous
                    candidate[a] = b[1]
                    moves += 1
                    value = score(candidate)
                    if value > best:
                        mapping, best, improved = candidate, value, True
                        break
                if improved:
                    break
            if improved:
                break
    return mapping, best
