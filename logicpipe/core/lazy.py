"""Names a package loads on first use (a module `__getattr__`, PEP 562), so that importing the package
costs only what its callers use: a solver worker or `logicpipe --help` loads neither the runner nor the
model client."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_names(package: str, where: dict[str, str]) -> Callable[[str], Any]:
    """The `__getattr__` of `package`: each name of `where` is taken from the submodule it maps to,
    imported when the name is first asked for."""

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f".{module}", package), name)

    return __getattr__
