"""No import circle among logicpipe's modules (imports inside functions count too): each module can be
read, and changed, without the ones that need it."""

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "logicpipe"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(name: str, path: Path, node: ast.ImportFrom, modules: set[str]) -> set[str]:
    """The modules of logicpipe one `from ... import ...` names (a name may be a module of the package)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    if node.level:
        base = package.split(".")[:len(package.split(".")) - node.level + 1]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    return {f"{target}.{a.name}" if f"{target}.{a.name}" in modules else target for a in node.names} & modules


def test_no_module_imports_one_that_imports_it_back():
    paths = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    packages = {name for name, path in paths.items() if path.name == "__init__.py"}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        if name in packages:  # a package's __init__ re-exports its modules' names: not a circle of theirs
            continue
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                found |= imported(name, path, node, set(paths))
            elif isinstance(node, ast.Import):
                found |= {alias.name for alias in node.names} & set(paths)
        graph[name] = found - packages - {name}
    try:
        list(TopologicalSorter(graph).static_order())
    except CycleError as exc:
        raise AssertionError(f"an import circle: {' -> '.join(exc.args[1])}") from None
    assert graph["logicpipe.data.programs"] and graph["logicpipe.data.loaders"]  # the graph was read
