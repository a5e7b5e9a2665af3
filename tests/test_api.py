"""The package's public names: each is what `__all__` says, never a subpackage that shares its name."""

import subprocess
import sys

from .conftest import ROOT


def test_run_is_the_function_on_every_access_also_after_the_runtime_is_imported():
    # A fresh interpreter, so no earlier import decides the answer: importing a subpackage binds it as an
    # attribute of the package, which used to hide the lazy `run` from the second access on.
    code = ("import inspect\n"
            "from logicpipe import run\n"
            "first = run\n"
            "import logicpipe.runtime.pool, logicpipe.runtime.folder\n"
            "import logicpipe\n"
            "from logicpipe import run as again\n"
            "print(inspect.isfunction(first), first is again is logicpipe.run, first.__module__)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True", "logicpipe.stages.runner"]


def test_every_public_name_imports():
    import logicpipe

    for name in logicpipe.__all__:
        assert getattr(logicpipe, name) is not None, name
    from logicpipe import DataError, LogicPipeError

    assert issubclass(DataError, LogicPipeError)
