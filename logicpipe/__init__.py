"""logicpipe: LLM formulates, a symbolic solver executes, errors drive refinement, answers are scored.

The public names load on first use, so a solver worker or `logicpipe list` imports only what it needs.
"""

from __future__ import annotations

from .core.lazy import lazy_names

__version__ = "0.2.0"

_ERRORS = ("DataError", "LLMError", "LogicPipeError", "PrerequisiteError", "ProgramExecutionError",
           "ProgramParseError", "RunStopped", "UsageError")
_PUBLIC = {
    **dict.fromkeys(_ERRORS, "core.errors"), "all_datasets": "data", "get_dataset": "data",
    "load_problems": "data", "get_solver": "solvers", "RunConfig": "stages", "RunReport": "stages",
    "baseline": "stages", "run": "stages", "run_stages": "stages",
    "diff": "report.diff", "problems_df": "report.frames", "problem_rows": "report.frames",
}
__all__ = sorted(_PUBLIC)

__getattr__ = lazy_names(__name__, _PUBLIC)
