"""Goal trees as text, Graphviz DOT, Mermaid, and template sentences for context."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from .knowledge import NOT_DERIVABLE

Node = dict[str, Any]


def text_tree(node: Node, prefix: str = "", last: bool = True, root: bool = True) -> list[str]:
    mark = "" if node.get("proved", True) else "  ✗"
    line = f"{node['goal']}  [{node['clause']}]{mark}"
    lines = [line if root else prefix + ("└── " if last else "├── ") + line]
    inner = "" if root else prefix + ("    " if last else "│   ")
    children = node.get("children", [])
    for index, child in enumerate(children):
        lines += text_tree(child, inner, index == len(children) - 1, root=False)
    return lines


def text_result(result: dict[str, Any]) -> str:
    lines = [f"?- {result['goal']}."]
    if result.get("error"):
        lines.append(f"   error: {result['error']}")
    for number, solution in enumerate(result["solutions"], start=1):
        bindings = ", ".join(f"{k} = {v}" for k, v in solution["bindings"].items()) or "true"
        lines.append(f"solution {number}: {bindings}")
        lines += ["  " + line for line in text_tree(solution["tree"])]
    if not result["proved"]:
        limit = f" (stopped at the {result['limit']} limit)" if result.get("limit") else ""
        lines.append(f"no: {NOT_DERIVABLE}{limit}")
        if result.get("explored"):
            lines.append("explored:")
            lines += ["  " + line for line in text_tree(result["explored"])]
    return "\n".join(lines)


def _walk(node: Node, counter: Iterator[int], parent: int | None = None) -> Iterator[tuple[int, int | None, Node]]:
    me = next(counter)
    yield me, parent, node
    for child in node.get("children", []):
        yield from _walk(child, counter, me)


def _trees(result: dict[str, Any]) -> list[tuple[str, Node]]:
    trees = [(f"solution {i}", s["tree"]) for i, s in enumerate(result["solutions"], start=1)]
    if result.get("explored"):
        trees.append(("explored (failed)", result["explored"]))
    return trees


def dot(results: list[dict[str, Any]]) -> str:
    lines = ["digraph proofs {", "  node [shape=box, fontname=monospace];"]
    counter = iter(range(1_000_000))
    for g, result in enumerate(results):
        for title, tree in _trees(result):
            lines.append(f"  subgraph cluster_{g}_{len(lines)} {{ label={json.dumps(result['goal'] + ' — ' + title)};")
            for me, parent, node in _walk(tree, counter):
                style = "" if node.get("proved", True) else ", color=red"
                label = json.dumps(f"{node['goal']}\n{node['clause']}")
                lines.append(f"    n{me} [label={label}{style}];")
                if parent is not None:
                    lines.append(f"    n{parent} -> n{me};")
            lines.append("  }")
    lines.append("}")
    return "\n".join(lines)


def mermaid(results: list[dict[str, Any]]) -> str:
    lines = ["graph TD"]
    counter = iter(range(1_000_000))
    for result in results:
        for title, tree in _trees(result):
            lines.append(f"  %% {result['goal']} — {title}")
            for me, parent, node in _walk(tree, counter):
                label = f"{node['goal']}<br/>{node['clause']}".replace('"', "#quot;")
                lines.append(f'  n{me}["{label}"]')
                if parent is not None:
                    lines.append(f"  n{parent} --> n{me}")
                if not node.get("proved", True):
                    lines.append(f"  style n{me} stroke:#c00")
    return "\n".join(lines)


def _reason(node: Node) -> str:
    clause = node["clause"]
    return f"{node['goal']} (current value)" if clause == "percept" else node["goal"]


def _explain(node: Node) -> list[str]:
    """One sentence per rule application, outermost first: "G holds by file:line, because A; B."."""
    children = node.get("children", [])
    if not children:
        return []
    because = "; ".join(_reason(c) for c in children)
    sentences = [f"{node['goal']} holds by {node['clause']}, because {because}."]
    for child in children:
        sentences += _explain(child)
    return sentences


def _failures(node: Node) -> list[str]:
    """The failed leaves of an explored tree: where each attempt broke down."""
    children = node.get("children", [])
    if node.get("proved", True):
        return []
    if not children or all(c.get("proved", True) for c in children):
        return [f"{node['goal']} ({node['clause']})"]
    return [f for child in children for f in _failures(child)]


def context_sentences(result: dict[str, Any]) -> list[str]:
    """Template context: what the KB derived for a goal, and from which facts and rules."""
    goal = result["goal"]
    if result.get("error"):
        return [f"The knowledge base could not evaluate {goal}: {result['error']}."]
    if not result["proved"]:
        sentence = f"The knowledge base cannot derive {goal} ({NOT_DERIVABLE})"
        failures = _failures(result["explored"]) if result.get("explored") else []
        return [sentence + (f"; the proof fails at: {'; '.join(failures)}." if failures else ".")]
    sentences = []
    for solution in result["solutions"]:
        tree = solution["tree"]
        bindings = ", ".join(f"{k} = {v}" for k, v in solution["bindings"].items())
        sentences.append(f"The knowledge base derives {tree['goal']}" + (f" (with {bindings})." if bindings else "."))
        sentences += _explain(tree)
    return sentences
