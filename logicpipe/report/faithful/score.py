"""One program held against its gold formulas: the function a worker of the isolated pool runs (a plain
payload in, a plain dict out; no pydantic in the worker). Everything it decides is under the symbol
alignment it finds first."""

from __future__ import annotations

from functools import reduce
from typing import Any

from ...core.errors import LogicPipeError
from ...solvers.fol import SECTIONS, FOLSolver
from ...solvers.fol_parser import Bin, parse_formula
from ...solvers.nltk_syntax import is_linc_program, linc_program
from ...solvers.sections import walk_sections
from . import align
from .logic import NO, UNKNOWN, YES, Verdict, decide, plain, rename, search, show
from .strings import bleu, le


def _conjunction(formulas: list[Any]) -> Any:
    return reduce(lambda a, b: Bin("and", a, b), formulas)


def _both(first: Verdict, second: Verdict) -> str:
    """Equivalence from the two entailments: yes only when both are proved, no when either fails."""
    if NO in (first.status, second.status):
        return NO
    return YES if first.status == second.status == YES else UNKNOWN


def _all(statuses: list[str]) -> str:
    if NO in statuses:
        return NO
    return YES if all(s == YES for s in statuses) else UNKNOWN


def _texts(program: str) -> tuple[list[tuple[str, str]], tuple[str, str]]:
    """(formula text, sentence) of each premise and of the conclusion, as the solver reads the program."""
    if is_linc_program(program):  # LINC's TEXT:/FOL: pairs: the TEXT line is the sentence
        read = linc_program(program)
        codes = [line.split("FOL:", 1)[1].strip() for line in program.split("</EVALUATE>")[0].split("\n")
                 if "FOL:" in line]
        return ([(code, note) for code, (_, note) in zip(codes, read.premises)],
                (codes[-1], read.conclusion[1]))
    premises: list[tuple[str, str]] = []
    conclusion: tuple[str, str] | None = None
    for line in walk_sections(program, SECTIONS, aliases={"Conclusions": "Conclusion"}, notes=[]):
        if line.section == "Premises":
            premises.append((line.code, line.comment or ""))
        elif line.section == "Conclusion" and conclusion is None:
            conclusion = (line.code, line.comment or "")
    assert conclusion is not None  # the solver's parse, run first, requires one
    return premises, conclusion


def score(payload: dict[str, Any]) -> dict[str, Any]:
    """payload: program (the model's text), gold {premises, sentences, conclusion} (formula texts and
    premise sentences), seconds (per Prover9 query and per counter-model search)."""
    seconds = float(payload.get("seconds", 1.0))
    gold_texts: list[str] = payload["gold"]["premises"]
    gold = [parse_formula(t) for t in gold_texts]
    gold_conclusion = parse_formula(payload["gold"]["conclusion"])
    try:
        parsed = FOLSolver().parse(payload["program"])
    except LogicPipeError as exc:
        return {"error": f"the program does not parse: {exc}"}
    texts, conclusion_text = _texts(payload["program"])
    model = [formula for formula, _ in parsed.premises]
    assert parsed.conclusion is not None
    model_conclusion = parsed.conclusion[0]
    groups = align.pair_sentences([sentence for _, sentence in texts], payload["gold"]["sentences"])
    if not groups and len(model) == len(gold):  # no sentences to go by: premises in the same order
        groups = [((i,), (i,)) for i in range(len(gold))]

    everything = [*model, model_conclusion]
    cache: dict[tuple, bool] = {}

    def agree(mapping: align.Mapping, index: int) -> bool:
        mine, theirs = groups[index]
        used = align.symbols([model[i] for i in mine])
        key = (index, tuple(sorted((s, repr(mapping.get(s))) for s in used)))
        if key not in cache:
            preds, consts = align.renaming(mapping, everything)
            left = _conjunction([rename(model[i], preds, consts) for i in mine])
            right = _conjunction([gold[j] for j in theirs])
            cache[key] = _same(left, right, seconds)
        return cache[key]

    # The conclusions pair too: they name the same sentence (the last group, of the last formulas).
    model_all, gold_all = [*model, model_conclusion], [*gold, gold_conclusion]
    groups_all = [*groups, ((len(model),), (len(gold),))]
    mapping = align.first_mapping(model_all, gold_all, groups_all)

    def agree_all(mapping: align.Mapping, index: int) -> bool:
        if index < len(groups):
            return agree(mapping, index)
        preds, consts = align.renaming(mapping, everything)
        mine = rename(model_conclusion, preds, consts)
        key = ("conclusion", tuple(sorted((s, repr(v)) for s, v in mapping.items())))
        if key not in cache:
            cache[key] = _same(mine, gold_conclusion, seconds)
        return cache[key]

    mapping, _ = align.improve(mapping, model_all, gold_all, groups_all, agree_all)
    preds, consts = align.renaming(mapping, everything)
    renamed = [rename(f, preds, consts) for f in model]
    renamed_conclusion = rename(model_conclusion, preds, consts)

    queries: dict[str, tuple[list[Any], Any]] = {}
    for j, formula in enumerate(gold):
        queries[f"recall {j}"] = (renamed, formula)
    for i, formula in enumerate(renamed):
        queries[f"precision {i}"] = (gold, formula)
    queries["conclusion model->gold"] = ([renamed_conclusion], gold_conclusion)
    queries["conclusion gold->model"] = ([gold_conclusion], renamed_conclusion)
    for index, (mine, theirs) in enumerate(groups):
        left = _conjunction([renamed[i] for i in mine])
        right = _conjunction([gold[j] for j in theirs])
        queries[f"group {index} model->gold"] = ([left], right)
        queries[f"group {index} gold->model"] = ([right], left)
    verdicts = decide(queries, seconds)

    recall = [verdicts[f"recall {j}"].status for j in range(len(gold))]
    precision = [verdicts[f"precision {i}"].status for i in range(len(model))]
    conclusion = _both(verdicts["conclusion model->gold"], verdicts["conclusion gold->model"])
    formulas = []
    for index, (mine, theirs) in enumerate(groups):
        forward, backward = verdicts[f"group {index} model->gold"], verdicts[f"group {index} gold->model"]
        row: dict[str, Any] = {
            "model": list(mine), "gold": list(theirs),
            "sentence": " / ".join(payload["gold"]["sentences"][j] for j in theirs),
            "model_formula": " ∧ ".join(texts[i][0] for i in mine),
            "gold_formula": " ∧ ".join(gold_texts[j] for j in theirs),
            "equivalent": _both(forward, backward),
        }
        row["how"] = _how(forward, backward)
        row["le"] = le(_conjunction([model[i] for i in mine]), _conjunction([gold[j] for j in theirs]))
        row["bleu"] = bleu(row["model_formula"], row["gold_formula"])
        formulas.append(row)
    conclusion_le = le(model_conclusion, gold_conclusion)
    conclusion_bleu = bleu(conclusion_text[0], payload["gold"]["conclusion"])
    les = [r["le"] for r in formulas if r["le"] is not None] + ([conclusion_le] if conclusion_le is not None else [])
    bleus = [r["bleu"] for r in formulas] + [conclusion_bleu]
    return {
        "error": None,
        "mapping": {"predicates": {f"{a[1][0]}/{a[1][1]}": f"{b[0]}/{b[1]}" for a, b in sorted(mapping.items())
                                   if a[0] == "p"},
                    "constants": {a[1]: b for a, b in sorted(mapping.items()) if a[0] == "c"},
                    "unmapped": [f"{s[1][0]}/{s[1][1]}" if s[0] == "p" else s[1] for s in align.symbols(everything)
                                 if s not in mapping]},
        "recall": recall, "precision": precision, "conclusion": conclusion,
        "conclusion_how": _how(verdicts["conclusion model->gold"], verdicts["conclusion gold->model"]),
        "conclusion_le": conclusion_le, "conclusion_bleu": conclusion_bleu,
        "formulas": formulas,
        "premises_missing": [gold_texts[j] for j, s in enumerate(recall) if s == NO],
        "premises_extra": [texts[i][0] for i, s in enumerate(precision) if s == NO],
        "equivalent": _all([*recall, *precision, conclusion]),
        "le": sum(les) / len(les) if les else None,
        "bleu": sum(bleus) / len(bleus),
        "renamed": [show(f) for f in renamed],
    }


def _same(left: Any, right: Any, seconds: float) -> bool:
    """The alignment's cheap test: no small world tells the two formulas apart (an undecided search
    counts as telling them apart, so a limit never makes a mapping look better)."""
    return search([left], right, seconds)[0] == "none" and search([right], left, seconds)[0] == "none"


def _how(forward: Verdict, backward: Verdict) -> str | None:
    """How a pair fails, in plain terms: which way the entailment breaks and the counter-model found."""
    said = []
    for verdict, way in ((forward, "the model's formula does not imply the gold one"),
                         (backward, "the gold formula does not imply the model's")):
        if verdict.status == NO:
            said.append(way + (f": {plain(verdict.countermodel)}" if verdict.countermodel else
                               " (Prover9's search ended without a proof)"))
        elif verdict.status == UNKNOWN:
            said.append(way.replace("does not imply", "may not imply") + f" (undecided: {verdict.how})")
    return "; ".join(said) or None
