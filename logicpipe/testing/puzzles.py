"""Generated constraint puzzles with their programs, as many as asked for: the scale benchmark's
task (scripts/benchmark_scale.py) and the tests that check a run's memory does not grow with it."""

from __future__ import annotations

import json
import random
from pathlib import Path

LETTERS = "ABC"
TASK = """\
name: scale
source: {format: jsonl, path: problems.jsonl}
fields: {id: id, context: context, question: question, options: options, answer: answer}
answer_space: options
formalism: csp
prompt: logicaldeduction
"""


def puzzle(index: int, rng: random.Random) -> tuple[dict, dict]:
    """One problem and its program: three objects in a row, two clues that fix the order."""
    names = [f"o{index}_{kind}" for kind in ("red", "green", "blue")]
    order = names[:]
    rng.shuffle(order)  # order[0] is leftmost
    position = {name: order.index(name) + 1 for name in names}
    asked = rng.randrange(3)
    options = [f"{letter}) The {name} is {'leftmost' if asked == 0 else 'rightmost' if asked == 2 else 'in the middle'}."
               for letter, name in zip(LETTERS, names)]
    answer = LETTERS[names.index(order[asked])]
    problem = {"id": f"p{index}", "context": f"Three objects {', '.join(names)} stand in a row.",
               "question": "Which of the following is true?", "options": options, "answer": answer}
    program = "\n".join([
        "Domain:", "1: leftmost", "3: rightmost", "Variables:",
        *(f"{name} [IN] [1, 2, 3]" for name in names),
        "Constraints:",
        f"{order[0]} == 1", f"{order[1]} < {order[2]}",
        f"AllDifferentConstraint([{', '.join(names)}])",
        "Query:",
        *(f"{letter}) {name} == {asked + 1}" for letter, name in zip(LETTERS, names)),
    ]) + "\n"
    assert position[order[asked]] == asked + 1
    return problem, {"id": problem["id"], "raw_logic_programs": [program]}


def generate(folder: Path, size: int) -> tuple[Path, Path]:
    rng = random.Random(size)
    folder.mkdir(parents=True, exist_ok=True)
    task, programs = folder / "scale.yaml", folder / "programs.json"
    task.write_text(TASK)
    with (folder / "problems.jsonl").open("w") as rows, programs.open("w") as released:
        released.write("[")
        for index in range(size):
            problem, program = puzzle(index, rng)
            rows.write(json.dumps(problem) + "\n")
            released.write(("," if index else "") + json.dumps(program))
        released.write("]")
    return task, programs
