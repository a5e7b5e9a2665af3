"""Which solvers are installed: the entry points of the group `logicpipe.solvers`, each `name =
"module:Class"`. logicpipe's own solvers are registered there too (pyproject.toml), so a plugin and a
built-in are found, listed and loaded the same way.

Nothing here imports a solver: the entry points are read (once per process, on first use) from the
installed packages' metadata, and a solver's module is imported only when that solver is asked for, so
start-up pays for neither. A plugin that fails to load is one line naming it and its package; the other
solvers are untouched.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from ..core.errors import PrerequisiteError, UsageError, did_you_mean

GROUP = "logicpipe.solvers"
# The order `logicpipe list` and error messages show logicpipe's own solvers in (the paper's, then ASP);
# plugins follow in name order.
_OWN = ("lp", "fol", "csp", "smt", "asp")
# What every solver class must have (base.Solver): checked at load, so a plugin missing one is named
# here rather than failing in the middle of a run.
_NEEDED = ("name", "formalism", "check", "parse", "execute")


@dataclass(frozen=True)
class Entry:
    name: str
    target: str  # module:Class
    package: str  # the distribution that registered it, with its version
    conflict: str = ""  # another package registers the same name with another target

    @property
    def module(self) -> str:
        """The module that defines the solver (what worker pools preload)."""
        return self.target.partition(":")[0]

    @property
    def builtin(self) -> bool:
        return self.package.split(" ")[0] == "logicpipe"

    def load(self) -> type:
        """The solver class; PrerequisiteError (one line, naming the plugin) when it cannot be loaded."""
        if self.conflict:
            raise PrerequisiteError(self.conflict)
        return _load(self)


@cache
def entries() -> dict[str, Entry]:
    """Every registered solver by name: logicpipe's own first, then plugins by name."""
    from importlib.metadata import distributions

    found: dict[str, Entry] = {}
    seen: set[str] = set()
    for dist in distributions():
        # Most installed packages register no solver: their entry points are not parsed, nor their
        # metadata read (a third of the cost of importlib.metadata.entry_points()).
        text = dist.read_text("entry_points.txt")
        if not text or f"[{GROUP}]" not in text:
            continue
        name = dist.metadata["Name"]
        if name is None or name.lower() in seen:  # a package seen twice on the path: the first counts, as in Python
            continue
        seen.add(name.lower())
        package = f"{name} {dist.version}"
        for point in dist.entry_points.select(group=GROUP):
            entry = Entry(point.name, point.value, package)
            known = found.get(point.name)
            if known is None:
                found[point.name] = entry
            elif known.target != entry.target:
                found[point.name] = Entry(point.name, known.target, known.package, conflict=(
                    f"solver '{point.name}' is registered twice: by {known.package} ({known.target}) and by "
                    f"{package} ({entry.target}); uninstall one of them"))
    order = {name: index for index, name in enumerate(_OWN)}
    return dict(sorted(found.items(), key=lambda item: (order.get(item[0], len(_OWN)), item[0])))


def names() -> list[str]:
    return list(entries())


def find(name: str) -> Entry:
    """The entry of an installed solver; UsageError naming the installed ones otherwise."""
    known = entries()
    entry = known.get(name)
    if entry is None:
        if not known:  # logicpipe itself is installed without its entry points (a stale install)
            raise PrerequisiteError(f"no solver is registered (entry points '{GROUP}'): reinstall logicpipe, "
                                    "e.g. pip install -e . (make setup)")
        raise UsageError(f"unknown solver '{name}'{did_you_mean(name, list(known))}; choose from {', '.join(known)}")
    return entry


@cache
def _load(entry: Entry) -> type:
    import importlib

    module, _, attribute = entry.target.partition(":")
    where = f"solver plugin '{entry.name}' ({entry.package}, {entry.target})"
    try:
        value: Any = importlib.import_module(module)
        for part in attribute.split(".") if attribute else []:
            value = getattr(value, part)
    except Exception as exc:  # noqa: BLE001 - any failure inside a plugin's import is that plugin's: one line
        raise PrerequisiteError(f"{where} cannot be loaded: {type(exc).__name__}: {_first_line(exc)}") from None
    if not isinstance(value, type):
        raise PrerequisiteError(f"{where} is not a class")
    missing = [name for name in _NEEDED if not hasattr(value, name)]
    if missing:
        raise PrerequisiteError(f"{where} lacks {', '.join(missing)} (see docs/formalisms.md)")
    return value


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else "(no message)"
