"""Every `logicpipe ...` command shown in README.md and the docs pages parses against the real CLI: its
subcommands exist and every option it uses is one the command takes, with a value of the right type.
Parsing stops before a command runs (nothing is read, written or sent)."""

from __future__ import annotations

from functools import cache

import pytest
import typer.main

from logicpipe.cli import app

from .blocks import ROOT, commands, doc_pages, quickstart_block, shell_blocks


@cache
def root():
    return typer.main.get_command(app)


def parse(args: list[str]) -> None:
    """Parse a command line the way `logicpipe` does, down to the leaf command, without invoking it."""
    command = root()
    ctx = command.make_context("logicpipe", list(args), resilient_parsing=False)
    while hasattr(command, "resolve_command"):
        # A group's context keeps the subcommand's name apart from its arguments.
        rest = [*(getattr(ctx, "protected_args", None) or getattr(ctx, "_protected_args", None) or []), *ctx.args]
        name, command, rest = command.resolve_command(ctx, rest)
        ctx = command.make_context(name, rest, parent=ctx)


def shown() -> list[tuple[str, list[str]]]:
    found = []
    for page in doc_pages():
        for body in shell_blocks(page):
            found += [(page.relative_to(ROOT).as_posix(), args) for args in commands(body)]
    return found


def test_the_docs_show_commands_of_every_kind():
    found = shown()
    pages = {page for page, _ in found}
    leaves = {" ".join(a for a in args[:2] if not a.startswith("-")) for _, args in found}
    # The examples span the pages and the commands; an extraction that found nothing would pass below.
    assert len(found) >= 40, found
    assert {"README.md", "docs/pipeline.md", "docs/models.md", "docs/kb.md", "docs/optimize.md"} <= pages
    assert {"run", "explain", "view", "validate", "baseline", "optimize", "reproduce", "list"} <= {
        leaf.split()[0] for leaf in leaves}


@pytest.mark.parametrize("page,args", shown(), ids=lambda value: value if isinstance(value, str) else " ".join(value))
def test_command_parses(page, args):
    try:
        parse(args)
    except Exception as exc:  # click's usage errors, or SystemExit from an eager option
        pytest.fail(f"{page}: `logicpipe {' '.join(args)}` does not parse: {exc}")


def test_quickstart_commands_reach_their_help():
    """Each quick-start command names a real command: `logicpipe CMD --help` works for it."""
    from typer.testing import CliRunner

    runner = CliRunner()
    quick = commands(quickstart_block())
    assert len(quick) >= 5
    for args in quick:
        path = [a for a in args[:2] if not a.startswith("-") and a in _names()]
        result = runner.invoke(app, [*path, "--help"])
        assert result.exit_code == 0, (args, result.output)
        assert "Usage" in result.output


def _names() -> set[str]:
    return set(root().commands) | {name for sub in root().commands.values() for name in getattr(sub, "commands", {})}


@pytest.mark.parametrize("args", [["run", "--datset", "folio"], ["kb", "prov", "x.pl", "a"], ["view"],
                                  ["run", "--workers", "two"]])
def test_a_wrong_command_does_not_parse(args):
    # The check above must be able to fail: a misspelt option, an unknown subcommand, a missing
    # argument and a value of the wrong type are all refused.
    with pytest.raises(Exception):  # noqa: B017 - click raises several usage error types
        parse(args)
