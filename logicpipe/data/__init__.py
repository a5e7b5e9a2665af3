"""Datasets: the registry of known datasets, their Logic-LM-format files, and the pinned download."""

from .loaders import load_problems, load_programs, resolve_file
from .registry import DatasetSpec, all_datasets, get_dataset

__all__ = ["DatasetSpec", "all_datasets", "get_dataset", "load_problems", "load_programs", "resolve_file"]
