"""The faithfulness checks judged against rewrites known to keep a translation's meaning and edits known
to change it: a gold-style problem of our own in FOLIO's form (eight premises with a disjunction, an
exclusive or, a conjunction and a quantifier scope to rewrite), translated again by each rewrite or
edit. Every rewrite must be judged equivalent, formula by formula; every edit not equivalent (or
unknown, counted), with the edited premise named and every other premise still equivalent."""

from __future__ import annotations

import pytest

from logicpipe.report.faithful.score import score

SENTENCES = [
    "If people sing in the choir often, then they come to every rehearsal.",
    "People either sing in the choir often or are idle members of the club.",
    "If people coach the junior team, then they are not members of the club.",
    "All people who are idle members of the club coach the junior team.",
    "All ambitious young players are members of the club.",
    "Mara either both comes to every rehearsal and is a member of the club, "
    "or she neither comes to every rehearsal nor is a member of the club.",
    "Tobi coaches the junior team and is not an idle member of the club.",
    "If anyone coaches the junior team, Tobi comes to every rehearsal.",
]
GOLD = [
    "∀x (SingsInChoir(x) → Rehearses(x))",
    "∀x (SingsInChoir(x) ∨ Idle(x))",
    "∀x (Coaches(x) → ¬Members(x))",
    "∀x (Idle(x) → Coaches(x))",
    "∀x (Ambitious(x) → Members(x))",
    "(Rehearses(mara) ∧ Members(mara)) ⊕ (¬Rehearses(mara) ∧ ¬Members(mara))",
    "Coaches(tobi) ∧ ¬Idle(tobi)",
    "∀x (Coaches(x) → Rehearses(tobi))",
]
CONCLUSION = "SingsInChoir(mara)"
CONCLUSION_SENTENCE = "Mara sings in the choir often."


def program(premises: list[tuple[str, str]], conclusion: str = CONCLUSION) -> str:
    lines = ["Premises:", *(f"{f} ::: {s}" for f, s in premises), "Conclusion:", f"{conclusion} ::: {CONCLUSION_SENTENCE}"]
    return "\n".join(lines) + "\n"


def replaced(index: int, *formulas: str) -> list[tuple[str, str]]:
    """The gold premises with premise `index` replaced by `formulas` (none: dropped), each with its sentence."""
    premises = [(f, s) for f, s in zip(GOLD, SENTENCES)]
    return premises[:index] + [(f, SENTENCES[index]) for f in formulas] + premises[index + 1:]


def judge(text: str) -> dict:
    result = score({"program": text, "seconds": 1.0,
                    "gold": {"premises": GOLD, "sentences": SENTENCES, "conclusion": CONCLUSION}})
    assert result["error"] is None, result
    return result


def renamed_everywhere() -> list[tuple[str, str]]:
    names = {"Members": "IsMember", "SingsInChoir": "SingsOften", "mara": "Mara", "Rehearses": "IsRehearsing"}
    premises = []
    for formula, sentence in zip(GOLD, SENTENCES):
        for old, new in names.items():
            formula = formula.replace(old, new)
        premises.append((formula, sentence))
    return premises


MERGED = [(f, s) for f, s in zip(GOLD, SENTENCES)]
MERGED = MERGED[:3] + [(f"{GOLD[3]} ∧ {GOLD[4]}", f"{SENTENCES[3]} {SENTENCES[4]}")] + MERGED[5:]

REWRITES = {
    "de Morgan": (replaced(2, "∀x ¬(Coaches(x) ∧ Members(x))"), CONCLUSION),
    "contraposition": (replaced(0, "∀x (¬Rehearses(x) → ¬SingsInChoir(x))"), CONCLUSION),
    "renamed variable": (replaced(3, "∀y (Idle(y) → Coaches(y))"), CONCLUSION),
    "renamed predicates and constants": (renamed_everywhere(), "SingsOften(Mara)"),
    "a conjunction split in two premises": (replaced(6, "Coaches(tobi)", "¬Idle(tobi)"), CONCLUSION),
    "two premises merged in one": (MERGED, CONCLUSION),
    "quantifier scope moved out of an implication": (replaced(7, "(∃x Coaches(x)) → Rehearses(tobi)"), CONCLUSION),
    "universal as a negated existential": (replaced(4, "¬∃x (Ambitious(x) ∧ ¬Members(x))"), CONCLUSION),
}

# edit -> (the premises, the gold premise it changes)
EDITS = {
    "dropped negation": (replaced(2, "∀x (Coaches(x) → Members(x))"), 2),
    "swapped implication": (replaced(0, "∀x (Rehearses(x) → SingsInChoir(x))"), 0),
    "universal made existential": (replaced(3, "∃x (Idle(x) → Coaches(x))"), 3),
    "another constant": (replaced(6, "Coaches(mara) ∧ ¬Idle(tobi)"), 6),
    "dropped premise": (replaced(4), 4),
    "two predicates swapped": (replaced(6, "Idle(tobi) ∧ ¬Coaches(tobi)"), 6),
}


@pytest.mark.parametrize("name", list(REWRITES))
def test_a_rewrite_that_keeps_the_meaning_is_equivalent(name):
    premises, conclusion = REWRITES[name]
    result = judge(program(premises, conclusion))
    assert result["equivalent"] == "yes", (name, result)
    assert result["recall"] == ["yes"] * len(GOLD) and set(result["precision"]) == {"yes"}, result
    assert result["conclusion"] == "yes"
    # Every gold premise stands in a pair, and every pair is equivalent.
    assert sorted(j for f in result["formulas"] for j in f["gold"]) == list(range(len(GOLD)))
    assert all(f["equivalent"] == "yes" for f in result["formulas"]), result["formulas"]


@pytest.mark.parametrize("name", list(EDITS))
def test_an_edit_that_changes_the_meaning_is_caught_and_named(name):
    premises, edited = EDITS[name]
    result = judge(program(premises))
    assert result["equivalent"] in ("no", "unknown"), (name, result)
    for row in result["formulas"]:
        if edited in row["gold"]:
            assert row["equivalent"] in ("no", "unknown"), (name, row)
            assert row["how"], row  # said how: which way it fails, with a counter-model where one was found
        else:
            assert row["equivalent"] == "yes", (name, row)
    if name == "dropped premise":
        assert result["recall"][edited] == "no" and result["premises_missing"] == [GOLD[edited]]
        assert all(edited not in row["gold"] for row in result["formulas"])
    else:
        assert any(edited in row["gold"] for row in result["formulas"])
    # The names stay where they were: an edit is not explained away by a new alignment.
    assert all(k.split("/")[0] == v.split("/")[0] for k, v in result["mapping"]["predicates"].items())


def test_renamed_names_are_aligned_and_shown():
    premises, conclusion = REWRITES["renamed predicates and constants"]
    result = judge(program(premises, conclusion))
    assert result["mapping"]["predicates"]["IsMember/1"] == "Members/1"
    assert result["mapping"]["predicates"]["SingsOften/1"] == "SingsInChoir/1"
    assert result["mapping"]["constants"]["Mara"] == "mara"


def test_names_swapped_in_the_whole_program_are_a_failure():
    # Coaches and Idle traded everywhere: each formula still has a valid alignment, but the names
    # say the opposite of the sentences; similarity keeps each name on its own gold name.
    swapped = [(f.replace("Coaches", "@").replace("Idle", "Coaches").replace("@", "Idle"), s)
               for f, s in zip(GOLD, SENTENCES)]
    result = judge(program(swapped))
    assert result["equivalent"] == "no"
    assert result["mapping"]["predicates"]["Coaches/1"] == "Coaches/1"


def test_a_counter_model_is_shown_in_plain_terms():
    premises, _ = EDITS["dropped negation"]
    row = next(f for f in judge(program(premises))["formulas"] if 2 in f["gold"])
    assert "a world of" in row["how"] and "Coaches(" in row["how"]


def test_names_with_nothing_in_common_are_found_by_equivalence():
    # Q1 and Q2 are alike to neither gold name and always occur together, so only the mapping that makes
    # the formulas equivalent tells them apart (the first guess, in name order, is the wrong way round).
    gold = {"premises": ["∀x (Rabbit(x) → Cute(x))"], "sentences": ["All rabbits are cute."],
            "conclusion": "Rabbit(tom) ∧ ¬Cute(tom)"}
    text = "Premises:\n∀x (Q1(x) → Q2(x)) ::: All rabbits are cute.\nConclusion:\nQ1(tom) ∧ ¬Q2(tom) ::: Tom is an uncute rabbit.\n"
    result = score({"program": text, "seconds": 1.0, "gold": gold})
    assert result["mapping"]["predicates"] == {"Q1/1": "Rabbit/1", "Q2/1": "Cute/1"}
    assert result["equivalent"] == "yes"
