"""The pipeline's stages (formulate, solve, refine, interpret, evaluate), each a module with
`run(ctx, trajectories) -> list[StageReport]`, and the runner that drives them.

The names load on first use: the command line needs the options (config.py) to parse a command, and
the runner only once a command runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.lazy import lazy_names

if TYPE_CHECKING:
    from .config import RunConfig
    from .context import Progress, RunContext, StageReport
    from .runner import PIPELINE, RunReport, baseline, problems_for, run, run_stages

_LAZY = {"RunConfig": "config", "Progress": "context", "RunContext": "context", "StageReport": "context",
         "PIPELINE": "runner", "RunReport": "runner", "baseline": "runner", "problems_for": "runner",
         "run": "runner", "run_stages": "runner"}

__getattr__ = lazy_names(__name__, _LAZY)


__all__ = ["PIPELINE", "Progress", "RunConfig", "RunContext", "RunReport", "StageReport", "baseline",
           "problems_for", "run", "run_stages"]
