"""Imported by the solver fork server alone (the `logicpipe` command preloads it there, and nothing
else): what every worker forked from the server would otherwise redo on its start, done once. It
loads no solver, nor pydantic: the sooner the server is ready, the sooner a command's first worker."""

from __future__ import annotations

import atexit
import gc
import os

from ..solvers import registry
from . import executor, pool  # noqa: F401 - what a new worker unpickles its start from

# Every installed package's entry points, read once: ~20 ms for each worker otherwise (its setup check
# finds its solver in the registry).
registry.entries()
# The server ends when the command does; its interpreter's own clean-up (freeing every module a solver
# loaded) adds a tenth of a second, for which a pipeline reading the command's output (it holds the
# command's stderr) waits. Workers never run this: a forked process ends with os._exit.
atexit.register(os._exit, 0)
# What the server loaded lives as long as it and each worker forked from it: frozen, the workers' garbage
# collector passes leave it alone, and so do not copy the memory pages it lies in (Python's advice for
# a process that forks without exec).
gc.freeze()
