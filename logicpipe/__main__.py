"""The `logicpipe` command and `python -m logicpipe`.

This module stays tiny, for two reasons. Every solver worker imports the main module when it starts
(logicpipe/run/pool.py says why), so whatever this imports, each worker pays for again. And a command
that solves starts the solver fork server before anything else is imported, so that the server loads
the solvers while this process loads the command line: a replay of a small dataset then waits for
neither."""

from __future__ import annotations

import sys

# Commands that run solver calls in the local worker pool.
_SOLVING = frozenset({"run", "solve", "refine", "reproduce", "compare", "optimize"})
# logicpipe's own solvers' modules (the entry points in pyproject.toml), imported once by the fork
# server for all workers; a plugin's module is imported by each of its workers.
OWN_SOLVERS = tuple(f"logicpipe.solvers.{name}" for name in ("lp", "fol", "csp", "smt", "asp"))


def main() -> None:
    argv = sys.argv[1:]
    if argv and argv[0] in _SOLVING and "ray" not in argv:  # --executor ray needs no local pool
        from .run.pool import start_early

        start_early(["logicpipe.solvers", *OWN_SOLVERS])
    from .cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
