"""logicpipe: LLM formulates, a symbolic solver executes, errors drive refinement, answers are scored."""

__version__ = "0.2.0"

from .data import all_datasets, get_dataset, load_problems  # noqa: E402
from .errors import (  # noqa: E402
    DataError,
    LLMError,
    LogicPipeError,
    PrerequisiteError,
    ProgramExecutionError,
    ProgramParseError,
    RunStopped,
    UsageError,
)
from .solvers import get_solver  # noqa: E402
from .stages import RunConfig, RunReport, baseline, run, run_stages  # noqa: E402

__all__ = [
    "DataError", "LLMError", "LogicPipeError", "PrerequisiteError", "ProgramExecutionError", "ProgramParseError",
    "RunConfig", "RunReport", "RunStopped", "UsageError", "all_datasets", "baseline", "get_dataset",
    "get_solver", "load_problems", "run", "run_stages",
]
