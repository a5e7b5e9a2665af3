"""Statements with gold labels taken from the KB itself, to measure `kb validate`.

True statements are derivable instances of the KB's predicates; false ones perturb them: a wrong
constant in one argument, or the relation negated. Every label is then confirmed by proving the
statement's goal, so a label never rests on the perturbation alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from .knowledge import KnowledgeBase
from .outcome import status
from .terms import Compound, Term, ground, parse_term, show


@dataclass(frozen=True)
class Statement:
    id: str
    text: str  # English, for a model to split and translate
    goal: str  # the right goal, for the deterministic check
    label: bool
    kind: str  # "derivable", "wrong constant", "negated", "negated wrong constant"


def verbalize(term: Term, negated: bool = False) -> str:
    if not isinstance(term, Compound):
        text = f"{show(term).replace('_', ' ')} holds"
    else:
        args = [show(a) for a in term.args]
        relation = term.name.replace("_", " ")
        if len(args) == 1:
            text = f"{args[0]} is {relation}"
        else:
            text = f"{args[0]} {relation} {' and '.join(args[1:])}"
    return f"It is not the case that {text}." if negated else f"{text[0].upper()}{text[1:]}."


def instances(kb: KnowledgeBase, per_predicate: int) -> list[Compound]:
    """Ground, derivable instances of each KB predicate, in the order Prolog finds them."""
    found: list[Compound] = []
    for predicate in kb.predicates:
        if predicate.arity == 0 or predicate.name.startswith("$"):  # SWI-Prolog's own ('$tabled'/2)
            continue
        variables = ", ".join(f"V{i}" for i in range(predicate.arity))
        result = kb.prove(f"{predicate.name}({variables})")
        seen: list[Term] = []
        for solution in result["solutions"]:
            term = parse_term(solution["tree"]["goal"])
            if isinstance(term, Compound) and ground(term) and term not in seen:
                seen.append(term)
        found += [t for t in seen[:per_predicate] if isinstance(t, Compound)]
    return found


def statements(kb: KnowledgeBase, per_predicate: int = 4) -> list[Statement]:
    true_terms = instances(kb, per_predicate)
    by_position: dict[tuple[str, int], list[Term]] = {}
    for term in true_terms:
        for index, arg in enumerate(term.args):
            options = by_position.setdefault((term.name, index), [])
            if arg not in options:
                options.append(arg)
    out: list[Statement] = []

    def add(term: Term, negated: bool, kind: str) -> None:
        goal = f"\\+ {show(term)}" if negated else show(term)
        verdict = status(kb.prove(goal))
        if verdict == "unknown":  # a limit stopped the search: no label either way
            return
        label = verdict == "proved"
        out.append(Statement(f"s{len(out):04d}", verbalize(term, negated), goal, label, kind))

    for term in true_terms:
        add(term, False, "derivable")
        add(term, True, "negated")
        wrong = _wrong_constant(kb, term, by_position)
        if wrong is not None:
            add(wrong, False, "wrong constant")
            add(wrong, True, "negated wrong constant")
    return out


def _wrong_constant(kb: KnowledgeBase, term: Compound, by_position: dict[tuple[str, int], list[Term]]) -> Compound | None:
    """The first one-argument change that the KB cannot derive (its search finished without a proof)."""
    for index in reversed(range(len(term.args))):
        for other in by_position[(term.name, index)]:
            if other == term.args[index]:
                continue
            changed = Compound(term.name, term.args[:index] + (other,) + term.args[index + 1:])
            if status(kb.prove(show(changed))) == "failed":  # the search finished: not derivable
                return changed
    return None


@dataclass
class Scores:
    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0
    untranslatable: int = 0

    def add(self, label: bool, predicted_true: bool) -> None:
        if predicted_true:
            self.tp += label
            self.fp += not label
        else:
            self.fn += label
            self.tn += not label

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0

    @property
    def accuracy(self) -> float:
        total = self.tp + self.fp + self.fn + self.tn
        return (self.tp + self.tn) / total if total else 0.0
