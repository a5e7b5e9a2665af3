"""Hugging Face datasets, imported only when a task names one (the `hf` extra). A saved dataset folder
is read with load_from_disk; anything else goes to load_dataset, which honours HF_DATASETS_OFFLINE and
its cache."""

from __future__ import annotations

from typing import Any

from ..core.errors import DataError, PrerequisiteError
from .registry import DatasetSpec

_SAVED = ("dataset_dict.json", "state.json")  # what save_to_disk writes at the top of its folder


def hf_rows(spec: DatasetSpec, split: str) -> tuple[list[dict], str]:
    try:
        import datasets
    except ImportError:
        raise PrerequisiteError("Hugging Face task sources need the datasets package: "
                                "pip install 'logicpipe[hf]'") from None
    src = spec.source
    if src.path is None:
        raise DataError(f"task {spec.key}: source.path names the Hugging Face dataset (a hub name or a folder)")
    local = spec.local(src.path)
    try:
        if local.is_dir() and any((local / name).exists() for name in _SAVED):
            loaded: Any = datasets.load_from_disk(str(local))
            where = str(local)
            if isinstance(loaded, datasets.DatasetDict):
                if split not in loaded:
                    raise DataError(f"{local} has no split '{split}'; it has {', '.join(loaded)}")
                loaded = loaded[split]
        else:
            name = str(local) if local.exists() else src.path
            data_files = _local_files(spec, src.data_files)
            loaded = datasets.load_dataset(name, src.config, data_files=data_files, split=split)
            where = f"{name}[{split}]"
    except DataError:
        raise
    except Exception as exc:  # noqa: BLE001 - datasets raises many kinds; the user needs one line
        raise DataError(f"task {spec.key}: cannot load Hugging Face dataset {src.path!r} split '{split}' "
                        f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})") from None
    return [dict(row) for row in loaded], where


def _local_files(spec: DatasetSpec, files: Any) -> Any:
    """data_files are relative to the task file, like every other path in it."""
    if files is None:
        return None
    if isinstance(files, str):
        return str(spec.local(files))
    if isinstance(files, list):
        return [str(spec.local(f)) for f in files]
    return {split: _local_files(spec, value) for split, value in files.items()}
