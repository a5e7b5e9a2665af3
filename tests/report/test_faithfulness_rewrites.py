"""The faithfulness checks judged against rewrites known to keep a translation's meaning and edits known
to change it: a gold-style FOLIO problem (FOLIO dev's first example, two premises about Dan added so a
conjunction and a quantifier scope can be rewritten), translated again by each rewrite or edit. Every
rewrite must be judged equivalent, formula by formula; every edit not equivalent (or unknown, counted),
with the edited premise named and every other premise still equivalent."""

from __future__ import annotations

import pytest

from logicpipe.report.faithful.score import score

SENTENCES = [
    "If people perform in school talent shows often, then they attend and are very engaged with school events.",
    "People either perform in school talent shows often or are inactive and disinterested members of their community.",
    "If people chaperone high school dances, then they are not students who attend the school.",
    "All people who are inactive and disinterested members of their community chaperone high school dances.",
    "All young children and teenagers who wish to further their academic careers are students who attend the school.",
    "Bonnie either both attends and is very engaged with school events and is a student who attends the school, "
    "or she neither attends and is very engaged with school events nor is a student who attends the school.",
    "Dan chaperones high school dances and is not an inactive member of his community.",
    "If anyone chaperones high school dances, Dan is very engaged with school events.",
]
GOLD = [
    "∀x (TalentShows(x) → Engaged(x))",
    "∀x (TalentShows(x) ∨ Inactive(x))",
    "∀x (Chaperone(x) → ¬Students(x))",
    "∀x (Inactive(x) → Chaperone(x))",
    "∀x (AcademicCareer(x) → Students(x))",
    "(Engaged(bonnie) ∧ Students(bonnie)) ⊕ (¬Engaged(bonnie) ∧ ¬Students(bonnie))",
    "Chaperone(dan) ∧ ¬Inactive(dan)",
    "∀x (Chaperone(x) → Engaged(dan))",
]
CONCLUSION = "TalentShows(bonnie)"
CONCLUSION_SENTENCE = "Bonnie performs in school talent shows often."


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
    names = {"Students": "IsStudent", "TalentShows": "PerformsInTalentShows", "bonnie": "Bonnie", "Engaged": "IsEngaged"}
    premises = []
    for formula, sentence in zip(GOLD, SENTENCES):
        for old, new in names.items():
            formula = formula.replace(old, new)
        premises.append((formula, sentence))
    return premises


MERGED = [(f, s) for f, s in zip(GOLD, SENTENCES)]
MERGED = MERGED[:3] + [(f"{GOLD[3]} ∧ {GOLD[4]}", f"{SENTENCES[3]} {SENTENCES[4]}")] + MERGED[5:]

REWRITES = {
    "de Morgan": (replaced(2, "∀x ¬(Chaperone(x) ∧ Students(x))"), CONCLUSION),
    "contraposition": (replaced(0, "∀x (¬Engaged(x) → ¬TalentShows(x))"), CONCLUSION),
    "renamed variable": (replaced(3, "∀y (Inactive(y) → Chaperone(y))"), CONCLUSION),
    "renamed predicates and constants": (renamed_everywhere(), "PerformsInTalentShows(Bonnie)"),
    "a conjunction split in two premises": (replaced(6, "Chaperone(dan)", "¬Inactive(dan)"), CONCLUSION),
    "two premises merged in one": (MERGED, CONCLUSION),
    "quantifier scope moved out of an implication": (replaced(7, "(∃x Chaperone(x)) → Engaged(dan)"), CONCLUSION),
    "universal as a negated existential": (replaced(4, "¬∃x (AcademicCareer(x) ∧ ¬Students(x))"), CONCLUSION),
}

# edit -> (the premises, the gold premise it changes)
EDITS = {
    "dropped negation": (replaced(2, "∀x (Chaperone(x) → Students(x))"), 2),
    "swapped implication": (replaced(0, "∀x (Engaged(x) → TalentShows(x))"), 0),
    "universal made existential": (replaced(3, "∃x (Inactive(x) → Chaperone(x))"), 3),
    "another constant": (replaced(6, "Chaperone(bonnie) ∧ ¬Inactive(dan)"), 6),
    "dropped premise": (replaced(4), 4),
    "two predicates swapped": (replaced(6, "Inactive(dan) ∧ ¬Chaperone(dan)"), 6),
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
    assert result["mapping"]["predicates"]["IsStudent/1"] == "Students/1"
    assert result["mapping"]["predicates"]["PerformsInTalentShows/1"] == "TalentShows/1"
    assert result["mapping"]["constants"]["Bonnie"] == "bonnie"


def test_names_swapped_in_the_whole_program_are_a_failure():
    # Chaperone and Inactive traded everywhere: each formula still has a valid alignment, but the names
    # say the opposite of the sentences; similarity keeps each name on its own gold name.
    swapped = [(f.replace("Chaperone", "@").replace("Inactive", "Chaperone").replace("@", "Inactive"), s)
               for f, s in zip(GOLD, SENTENCES)]
    result = judge(program(swapped))
    assert result["equivalent"] == "no"
    assert result["mapping"]["predicates"]["Chaperone/1"] == "Chaperone/1"


def test_a_counter_model_is_shown_in_plain_terms():
    premises, _ = EDITS["dropped negation"]
    row = next(f for f in judge(program(premises))["formulas"] if 2 in f["gold"])
    assert "a world of" in row["how"] and "Chaperone(" in row["how"]


def test_names_with_nothing_in_common_are_found_by_equivalence():
    # Q1 and Q2 are alike to neither gold name and always occur together, so only the mapping that makes
    # the formulas equivalent tells them apart (the first guess, in name order, is the wrong way round).
    gold = {"premises": ["∀x (Rabbit(x) → Cute(x))"], "sentences": ["All rabbits are cute."],
            "conclusion": "Rabbit(tom) ∧ ¬Cute(tom)"}
    text = "Premises:\n∀x (Q1(x) → Q2(x)) ::: All rabbits are cute.\nConclusion:\nQ1(tom) ∧ ¬Q2(tom) ::: Tom is an uncute rabbit.\n"
    result = score({"program": text, "seconds": 1.0, "gold": gold})
    assert result["mapping"]["predicates"] == {"Q1/1": "Rabbit/1", "Q2/1": "Cute/1"}
    assert result["equivalent"] == "yes"
