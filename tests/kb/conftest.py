import subprocess

import pytest

from logicpipe.cli import main


@pytest.fixture
def kbcli(capsys, monkeypatch):
    """Run `logicpipe ARGS` in this process (the CLI's own main, without a Python start-up per call)."""
    monkeypatch.setenv("COLUMNS", "200")

    def run(*args: str, **_: object) -> subprocess.CompletedProcess:
        capsys.readouterr()
        try:
            main(list(args))
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        captured = capsys.readouterr()
        return subprocess.CompletedProcess(list(args), code, captured.out, captured.err)

    return run
