"""README.md's and docs/index.md's solver tables name every solver that ships (`logicpipe list`)."""

import re

from tests.conftest import ROOT, cli


def test_the_front_pages_list_every_solver_logicpipe_list_shows():
    listed = cli("list").stdout.split("solvers:")[1]
    tools = re.findall(r"built-in .*?\((.+?)\)\s*$", listed, re.M)
    assert tools == ["SWI-Prolog", "Prover9", "python-constraint2", "Z3", "clingo"]
    for page in ("README.md", "docs/index.md"):
        rows = [line for line in (ROOT / page).read_text().splitlines() if line.startswith("| ")]
        for tool in tools:
            assert any(f"| {tool}" in row for row in rows), (page, tool)
