"""The typer application class of `logicpipe` and `logicpipe kb`.

Typer 0.29's rich help shows a flag as `--overwrite <bool>` (it renders the type of any option whose
metavar is unset), its own --help included, and an argument as `{run_dir}`. Commands and groups made
through App show every flag as a plain flag and every argument as RUN_DIR, so no command has to
remember `metavar=""`."""

from __future__ import annotations

import copy
import sys
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup
from typer.main import get_command_name


def _plain(option: Any) -> Any:
    if option is not None and getattr(option, "is_flag", False) and option.metavar is None:
        option.metavar = ""
    # Typer 0.29's usage line shows a required argument as `{run_dir}`: shown as click shows it, RUN_DIR
    # ([QUESTION] when optional, KB... when repeated).
    if getattr(option, "param_type_name", "") == "argument" and option.name and hasattr(option, "_usage_display_name"):
        shown = option.name.upper() if option.required else f"[{option.name.upper()}]"
        option._usage_display_name = lambda: shown + ("..." if option.nargs != 1 else "")
    return option


class _PlainFlags:
    """Mixed into typer's command and group classes: every flag, --help included, without a type."""

    params: list[Any]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for param in self.params:
            _plain(param)

    def get_help_option(self, ctx: Any) -> Any:
        return _plain(super().get_help_option(ctx))  # type: ignore[misc]


class _Command(_PlainFlags, TyperCommand):
    pass


class _Group(_PlainFlags, TyperGroup):
    pass


class App(typer.Typer):
    """typer.Typer whose commands and groups show flags as flags."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(cls=_Group, **kwargs)

    def command(self, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("cls", _Command)
        return super().command(*args, **kwargs)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Typer turns every command's signature into options on each call (30 ms for logicpipe's);
        a command line that names a command is given an app that has only that one. Anything else
        (no command, a misspelt one that earns a did-you-mean, --help of the whole app) the whole app."""
        argv = kwargs.get("args")
        argv = sys.argv[1:] if argv is None else list(argv)
        return typer.Typer.__call__(self._only(argv[0]) if argv else self, *args, **kwargs)

    def _only(self, name: str) -> typer.Typer:
        commands = [c for c in self.registered_commands
                    if (c.name or get_command_name(getattr(c.callback, "__name__", ""))) == name]
        groups = [g for g in self.registered_groups if g.name == name]
        if not commands and not groups:
            return self
        narrowed = copy.copy(self)
        narrowed.registered_commands, narrowed.registered_groups = commands, groups
        return narrowed
