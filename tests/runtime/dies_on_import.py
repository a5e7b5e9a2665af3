"""A pool target whose import ends the process, as a broken native library or a shadowed package can:
the worker dies before it can say why (tests/runtime/test_pool.py). Never imported by the test process."""

import os

os._exit(7)


def call(payload: dict) -> str:  # pragma: no cover - never reached
    return "unreachable"
