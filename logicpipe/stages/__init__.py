"""The pipeline's stages (formulate, solve, refine, interpret, evaluate), each a module with
`run(ctx, trajectories) -> list[StageReport]`, and the runner that drives them."""

from .config import RunConfig
from .context import Progress, RunContext, StageReport
from .runner import PIPELINE, RunReport, baseline, problems_for, run, run_stages

__all__ = ["PIPELINE", "Progress", "RunConfig", "RunContext", "RunReport", "StageReport", "baseline",
           "problems_for", "run", "run_stages"]
