"""Helpers shared by the viewer tests: the page's embedded data and stage records."""

import json
from pathlib import Path

_DATA = '<script id="run-data" type="application/json">'


def payload(html: str) -> dict:
    start = html.index(_DATA) + len(_DATA)
    return json.loads(html[start:html.index("</script>", start)])


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def by_id(problems: list[dict], problem_id: str) -> dict:
    return next(p for p in problems if p["id"] == problem_id)
