"""logicpipe: LLM formulates, a symbolic solver executes, errors drive refinement, answers are scored."""

from .config import RunConfig
from .datasets import all_datasets, get_dataset, load_problems
from .errors import (
    DataError,
    LogicPipeError,
    PrerequisiteError,
    ProgramExecutionError,
    ProgramParseError,
    UsageError,
)
from .pipeline import evaluate, formulate, interpret, run, solve
from .solvers import get_solver

__all__ = [
    "DataError", "LogicPipeError", "PrerequisiteError", "ProgramExecutionError", "ProgramParseError",
    "RunConfig", "UsageError", "all_datasets", "evaluate", "formulate", "get_dataset", "get_solver",
    "interpret", "load_problems", "run", "solve",
]
__version__ = "0.1.0"
