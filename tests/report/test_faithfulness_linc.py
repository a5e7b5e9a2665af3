"""A LINC program (NLTK's syntax, TEXT:/FOL: pairs) is scored like a Logic-LM one: its TEXT lines are the
sentences the premises pair by, and the gold formulas are held against it under the name alignment."""

from __future__ import annotations

from logicpipe.report.faithful.score import score

GOLD = {"premises": ["∀x (Cat(x) → Animal(x))", "∀x (Animal(x) → ¬Plant(x))", "Cat(tom)"],
        "sentences": ["All cats are animals.", "No animal is a plant.", "Tom is a cat."],
        "conclusion": "¬Plant(tom)"}


def linc(second: str) -> str:
    return ("TEXT: All cats are animals.\nFOL: all x. (IsCat(x) -> IsAnimal(x))\n"
            f"TEXT: No animal is a plant.\nFOL: {second}\n"
            "TEXT: Tom is a cat.\nFOL: IsCat(tom)\n"
            "TEXT: Tom is not a plant.\nFOL: -IsPlant(tom)\n")


def test_a_faithful_linc_program_is_equivalent_under_the_alignment():
    result = score({"program": linc("all x. (IsAnimal(x) -> -IsPlant(x))"), "gold": GOLD, "seconds": 5})
    assert result["error"] is None, result
    assert result["equivalent"] == "yes" and result["conclusion"] == "yes"
    assert result["mapping"]["predicates"] == {"IsAnimal/1": "Animal/1", "IsCat/1": "Cat/1", "IsPlant/1": "Plant/1"}


def test_a_dropped_negation_in_a_linc_program_is_named():
    result = score({"program": linc("all x. (IsAnimal(x) -> IsPlant(x))"), "gold": GOLD, "seconds": 5})
    assert result["equivalent"] == "no"
    assert result["premises_missing"] == ["∀x (Animal(x) → ¬Plant(x))"]
    assert result["premises_extra"] == ["all x. (IsAnimal(x) -> IsPlant(x))"]
