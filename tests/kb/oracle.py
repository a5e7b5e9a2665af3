"""Plain swipl on the same KB: the oracle the kb tests hold the engine's verdicts against."""

import subprocess

from logicpipe.solvers.lp import swipl_path

STATUS = {"true": "proved", "false": "failed", "raised": "unknown"}  # what kb prove should say for each


def swipl_says(kb, goal, setup="true"):
    """'true', 'false' or 'raised': the goal on a fresh swipl that consulted the KB (after `setup`)."""
    query = f"{setup}, catch((({goal}) -> R = true ; R = false), _, R = raised), write(R)"
    done = subprocess.run([swipl_path(), "-q", "-g", f"consult('{kb}'), {query}", "-t", "halt"],
                          capture_output=True, text=True, timeout=60)
    return done.stdout.strip()
