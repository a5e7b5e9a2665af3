"""Goal trees as text, Graphviz DOT, Mermaid, and template sentences for context."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .knowledge import FAILED, NOT_DERIVABLE, PROVED

Node = dict[str, Any]


def _depth_first(node: Node) -> Iterator[tuple[Node, list[bool]]]:
    """Each node with, per ancestor level, whether that ancestor was a last child (an explicit stack:
    a tree as deep as its data allows, no recursion limit)."""
    stack: list[tuple[Node, list[bool]]] = [(node, [])]
    while stack:
        current, lasts = stack.pop()
        yield current, lasts
        children = current.get("children", [])
        for index in range(len(children) - 1, -1, -1):
            stack.append((children[index], [*lasts, index == len(children) - 1]))


def text_tree(node: Node) -> list[str]:
    lines = []
    for current, lasts in _depth_first(node):
        mark = "" if current.get("proved", True) else "  ✗"
        line = f"{current['goal']}  [{current['clause']}]{mark}"
        if lasts:
            prefix = "".join("    " if last else "│   " for last in lasts[:-1])
            line = prefix + ("└── " if lasts[-1] else "├── ") + line
        lines.append(line)
    return lines


def verdict_line(result: dict[str, Any]) -> str:
    """What the search found: proved, failed (it finished: false, or missing from the KB), or unknown
    (it did not finish: a limit, an error, a refused call); never a limit read as false."""
    status = result["status"]
    if status == PROVED:
        more = f" (solutions cut: {result.get('reason') or 'more than --max-solutions'})" if result["truncated"] else ""
        return f"yes: proved{more}"
    if status == FAILED:
        return f"no: {NOT_DERIVABLE}"
    return f"unknown: {result.get('reason', 'the search did not finish')}"


def text_result(result: dict[str, Any]) -> str:
    lines = [f"?- {result['goal']}."]
    for number, solution in enumerate(result["solutions"], start=1):
        bindings = ", ".join(f"{k} = {v}" for k, v in solution["bindings"].items()) or "true"
        lines.append(f"solution {number}: {bindings}")
        lines += ["  " + line for line in text_tree(solution["tree"])]
    lines.append(verdict_line(result))
    if result.get("explored"):
        lines.append("explored:")
        lines += ["  " + line for line in text_tree(result["explored"])]
    return "\n".join(lines)


def _walk(node: Node, counter: Iterator[int]) -> Iterator[tuple[int, int | None, Node]]:
    stack: list[tuple[Node, int | None]] = [(node, None)]
    while stack:
        current, parent = stack.pop()
        me = next(counter)
        yield me, parent, current
        stack.extend((child, me) for child in reversed(current.get("children", [])))


def _trees(result: dict[str, Any]) -> list[tuple[str, Node]]:
    trees = [(f"solution {i}", s["tree"]) for i, s in enumerate(result["solutions"], start=1)]
    if result.get("explored"):
        trees.append(("explored (failed)", result["explored"]))
    return trees


def _dot_string(text: str) -> str:
    """A DOT quoted string: only backslash and double quote escaped, newlines as \\n; any other
    character as it is (Graphviz reads UTF-8, but not JSON's \\u escapes)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def dot(results: list[dict[str, Any]]) -> str:
    lines = ["digraph proofs {", "  node [shape=box, fontname=monospace];"]
    counter = iter(range(1_000_000))
    for g, result in enumerate(results):
        for title, tree in _trees(result):
            lines.append(f"  subgraph cluster_{g}_{len(lines)} {{ label={_dot_string(result['goal'] + ' — ' + title)};")
            for me, parent, node in _walk(tree, counter):
                style = "" if node.get("proved", True) else ", color=red"
                label = _dot_string(f"{node['goal']}\n{node['clause']}")
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
    if not node.get("proved", True):
        return f"{node['goal']} fails"
    clause = node["clause"]
    return f"{node['goal']} (current value)" if clause == "percept" else node["goal"]


def _explain(node: Node) -> list[str]:
    """One sentence per rule application, outermost first: "G holds by file:line, because A; B.". A
    negation's tree holds the negated goal's failed search: "G does not hold: file:line needs A; B fails."."""
    sentences = []
    for current, _ in _depth_first(node):
        children = current.get("children", [])
        if not children:
            continue
        parts = "; ".join(_reason(c) for c in children)
        if current.get("proved", True):
            sentences.append(f"{current['goal']} holds by {current['clause']}, because {parts}.")
        else:
            sentences.append(f"{current['goal']} does not hold: {current['clause']} needs {parts}.")
    return sentences


def _failures(node: Node) -> list[str]:
    """The failed leaves of an explored tree: where each attempt broke down."""
    found, stack = [], [node]
    while stack:
        current = stack.pop()
        children = current.get("children", [])
        if current.get("proved", True):
            continue
        if not children or all(c.get("proved", True) for c in children):
            found.append(f"{current['goal']} ({current['clause']})")
        else:
            stack.extend(reversed(children))
    return found


def context_sentences(result: dict[str, Any]) -> list[str]:
    """Template context: what the KB derived for a goal, and from which facts and rules."""
    goal = result["goal"]
    if result["status"] not in (PROVED, FAILED):
        return [f"The knowledge base could not decide {goal}: {result.get('reason', 'the search did not finish')}."]
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
