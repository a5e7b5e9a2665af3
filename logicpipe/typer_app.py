"""The typer application class of `logicpipe` and `logicpipe kb`.

Typer 0.29's rich help shows a flag as `--overwrite <bool>` (it renders the type of any option whose
metavar is unset), its own --help included. Commands and groups made through App show every flag as a
plain flag, so no command has to remember `metavar=""`."""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup


def _plain(option: Any) -> Any:
    if option is not None and getattr(option, "is_flag", False) and option.metavar is None:
        option.metavar = ""
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
