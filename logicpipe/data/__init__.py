"""Datasets: task files (the built-in ones and a user's), their loaders, and the pinned Logic-LM download."""

from .loaders import check_problems, load_problems, load_programs, resolve_file
from .problemset import ProblemSet, index_problems
from .programs import Programs, index_programs
from .registry import DatasetSpec, all_datasets, get_dataset, load_task_file

__all__ = ["DatasetSpec", "ProblemSet", "Programs", "all_datasets", "check_problems", "get_dataset", "index_problems",
           "index_programs", "load_problems", "load_programs", "load_task_file", "resolve_file"]
