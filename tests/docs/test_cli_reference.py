"""docs/cli.md is generated from the typer app (scripts/cli_reference.py, `make docs-cli`); these tests
fail when it is stale, and check the page against `--help` itself, an output the generator does not
produce."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from logicpipe.cli import app

from .blocks import ROOT, load_script

PAGE = ROOT / "docs" / "cli.md"


def generator():
    return load_script("cli_reference")


def test_the_page_is_what_make_docs_cli_writes_now():
    assert PAGE.read_text(encoding="utf-8") == generator().render(), (
        "docs/cli.md is stale: run `make docs-cli` (or python scripts/cli_reference.py) and commit it")


def test_the_check_mode_tells_a_stale_page(tmp_path, capsys):
    page = tmp_path / "cli.md"
    script = generator()
    assert script.main(["--out", str(page)]) == 0
    assert page.read_text(encoding="utf-8") == PAGE.read_text(encoding="utf-8")
    assert script.main(["--check", "--out", str(page)]) == 0
    page.write_text(page.read_text(encoding="utf-8").replace("--max-rounds", "--max-round"), encoding="utf-8")
    assert script.main(["--check", "--out", str(page)]) == 1
    assert "make docs-cli" in capsys.readouterr().err
    assert script.main(["--check", "--out", str(tmp_path / "absent.md")]) == 1


def _sections() -> dict[str, str]:
    text = PAGE.read_text(encoding="utf-8")
    parts = re.split(r"^#{2,4} (logicpipe(?: [\w-]+)*)$", text, flags=re.M)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts), 2)}


def _leaves() -> list[list[str]]:
    import typer.main

    root = typer.main.get_command(app)
    paths = []
    for name, command in root.commands.items():
        paths.append([name])
        paths += [[name, sub] for sub in getattr(command, "commands", {})]
    return paths


@pytest.mark.parametrize("path", _leaves(), ids=" ".join)
def test_every_option_that_help_lists_is_on_the_page(path):
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "250", "TERM": "dumb"})
    assert result.exit_code == 0, result.output
    options = set(re.findall(r"(?<![\w-])(--[a-z][\w-]*)", result.output)) - {"--help"}
    section = _sections().get(" ".join(["logicpipe", *path]))
    assert section is not None, f"docs/cli.md has no section for logicpipe {' '.join(path)}"
    missing = sorted(option for option in options if f"{option}" not in section)
    assert not missing, f"logicpipe {' '.join(path)} --help lists {missing}, docs/cli.md does not"
