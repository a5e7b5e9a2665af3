"""The `logicpipe` command and `python -m logicpipe`.

This module stays tiny: a command that solves starts the solver fork server before anything else is
imported, so that the server is ready (logicpipe/runtime/ready.py) by the time this process has loaded
the command line; each worker then loads its own solver while the command reads its problems and
records. No worker runs this module (logicpipe/runtime/pool.py, _Popen, says why)."""

from __future__ import annotations

import gc
import os
import sys

# Commands that run solver calls in the local worker pool.
_SOLVING = frozenset({"run", "solve", "refine", "reproduce", "compare", "optimize"})


def main() -> None:
    # pydantic looks for plugins (every installed package's entry points: 15 ms) on the first model it
    # builds, in this process and in the solver fork server. logicpipe uses none; set the variable
    # empty to load yours.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    # Loading the command line makes some 60,000 objects that live as long as the process, and almost
    # no garbage (a few hundred objects): the garbage collector's passes over them while they load,
    # and over them again later, find nothing (15-25 ms). It is off while they load, then they are
    # frozen: left out of every later pass.
    gc.disable()
    argv = sys.argv[1:]
    if argv and argv[0] in _SOLVING and "ray" not in argv:  # --executor ray needs no local pool
        from .runtime.pool import start_early

        start_early(["logicpipe.runtime.ready"])
    from .cli import main as cli_main

    gc.freeze()
    gc.enable()

    try:
        cli_main()
    except SystemExit as exc:
        _leave(exc.code)
    _leave(0)


def _leave(code: object) -> None:
    """End as Python's own exit does, less its last step, freeing every module and object one by one
    (a tenth of a second after a run, for nothing: the process is ending). Before that, as Python
    does: other threads joined, atexit handlers run, the standard streams flushed. Files the command
    wrote are closed by then: every writer closes its files when it finishes."""
    import atexit
    import threading

    for thread in threading.enumerate():
        if thread is not threading.main_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    if code is None:
        code = 0
    elif not isinstance(code, int):  # sys.exit("message"), as Python reports it
        print(code, file=sys.stderr)
        code = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed pipe (`logicpipe list | head`): Python's own code for it
        code = code or 120
    os._exit(code)


if __name__ == "__main__":
    main()
