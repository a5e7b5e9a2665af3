"""Datasets: task files (the built-in ones and a user's), their loaders, and the pinned Logic-LM download."""

from .loaders import check_problems, load_problems, load_programs, resolve_file
from .registry import DatasetSpec, all_datasets, get_dataset, load_task_file

__all__ = ["DatasetSpec", "all_datasets", "check_problems", "get_dataset", "load_problems", "load_programs",
           "load_task_file", "resolve_file"]
