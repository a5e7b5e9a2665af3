"""Run Logic-LM's own FOL parsing (FOL_Prover9_Program of teacherpeterpan/Logic-LLM: its nltk grammar, its ply
translation to Prover9 syntax, then nltk's reader) on released FOLIO programs, and print which it accepts, as
JSON {"<file>:<id>": true | false | "nltk: <error>"}. An independent check of the "Logic-LM's code reads it so"
column of docs/tasks.md's leniency table: feed the output to `python scripts/leniency.py --logic-lm FILE`.

It imports Logic-LM's code, so it runs in a Python that has nltk and ply (not logicpipe's virtual environment):

    python -m venv /tmp/llm && /tmp/llm/bin/pip install nltk ply
    git clone https://github.com/teacherpeterpan/Logic-LLM /tmp/Logic-LLM
    /tmp/llm/bin/python scripts/logiclm_fol_check.py /tmp/Logic-LLM $LOGICPIPE_DATA/programs/FOLIO_dev_*.json > fol.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main() -> None:
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    sys.path.insert(0, str(Path(sys.argv[1]) / "models" / "symbolic_solvers"))
    from fol_solver.prover9_solver import FOL_Prover9_Program  # Logic-LM's code, as its own runs call it
    from nltk.sem.logic import Expression

    verdicts: dict[str, bool | str] = {}
    for path in map(Path, sys.argv[2:]):
        for record in json.loads(path.read_text()):
            text = (record.get("raw_logic_programs") or [""])[0]
            program = FOL_Prover9_Program(text)
            verdict: bool | str = bool(program.flag)
            if verdict:
                # execute_program reads each translated formula with nltk first; a failed translation is None.
                try:
                    for formula in [program.prover9_conclusion, *program.prover9_premises]:
                        Expression.fromstring(formula)
                except Exception as exc:  # noqa: BLE001 - Logic-LM's execute_program catches every error too
                    verdict = f"nltk: {type(exc).__name__}"
            verdicts[f"{path.name}:{record['id']}"] = verdict
    json.dump(verdicts, sys.stdout, indent=0)


if __name__ == "__main__":
    main()
