"""`kb check`: what SWI-Prolog's own tools (library(check), clause inspection) find in a KB, from
check.pl run in a separate swipl bounded in time and memory."""

from __future__ import annotations

import json
import os
import resource
import subprocess
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..core import jail
from ..core.errors import ProgramExecutionError, SolverTimeout
from ..solvers.lp import swipl_path
from .knowledge import KnowledgeBase, LoadMessage, kb_files
from .prolog import ProofLimits, kb_view

CHECKER = Path(__file__).with_name("check.pl")
_REPORT = "@@report "  # on a line of its own: the KB's own directives may print too
_OVERHEAD_MB = 1024  # the executable, its libraries and the atom table, over the Prolog stacks


class _Found(BaseModel):
    model_config = ConfigDict(extra="forbid")
    file: str
    line: int


class Message(_Found):
    kind: str  # error or warning
    message: str


class CheckedPredicate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    module: str
    name: str
    arity: int
    clauses: int
    file: str
    dynamic: bool
    tabled: bool
    exported: bool

    @property
    def signature(self) -> str:
        return f"{self.name}/{self.arity}" if self.module == "kb" else f"{self.module}:{self.name}/{self.arity}"


class Undefined(_Found):
    predicate: str
    caller: str


class Unreachable(_Found):
    predicate: str
    shadowed_by: int  # line of the earlier clause that always commits first


class Discontiguous(_Found):
    predicate: str


class Duplicate(_Found):
    predicate: str
    first_line: int
    kind: str  # clause (a variant of an earlier clause), redefined (by a later file), builtin


class LeftRecursive(_Found):
    predicate: str
    via: list[str]  # the cycle of leftmost calls, from the predicate back to it
    tabled: bool  # declared `:- table` by the KB itself


class Effect(BaseModel):
    model_config = ConfigDict(extra="forbid")
    predicate: str
    calls: str  # a builtin library(sandbox) refuses, reached by the predicate's own rules


class CheckReport(BaseModel):
    model_config = ConfigDict(extra="forbid")
    messages: list[Message] = Field(default_factory=list)
    predicates: list[CheckedPredicate] = Field(default_factory=list)
    undefined: list[Undefined] = Field(default_factory=list)
    unreachable: list[Unreachable] = Field(default_factory=list)
    discontiguous: list[Discontiguous] = Field(default_factory=list)
    duplicates: list[Duplicate] = Field(default_factory=list)
    left_recursive: list[LeftRecursive] = Field(default_factory=list)
    effects: list[Effect] = Field(default_factory=list)
    modules: list[str] = Field(default_factory=list)  # modules the KB's files define

    @property
    def failed(self) -> bool:
        """A KB that does not load (a clause for a builtin is a load error), or that calls a procedure
        defined nowhere."""
        return (bool(self.undefined) or any(m.kind == "error" for m in self.messages)
                or any(d.kind == "builtin" for d in self.duplicates))

    def findings(self) -> list[str]:
        """One `file:line: kind: text` line per finding, in file and line order."""
        lines: list[tuple[str, int, str]] = []
        for m in self.messages:  # shown as the engine shows load messages (location once)
            shown = str(LoadMessage(m.kind, m.file, m.line, m.message)).split(": ", 1)[1]
            lines.append((m.file, m.line, shown))
        for u in self.undefined:
            lines.append((u.file, u.line, f"error: {u.caller} calls {u.predicate}, which is not defined"))
        for r in self.unreachable:
            lines.append((r.file, r.line, f"warning: unreachable clause of {r.predicate}: the clause at line "
                                          f"{r.shadowed_by} matches every call it matches and cuts first"))
        for d in self.discontiguous:
            lines.append((d.file, d.line, f"warning: clauses of {d.predicate} are not together "
                                          f"(declare :- discontiguous {d.predicate}. if that is meant)"))
        for c in self.duplicates:
            text = {"clause": f"duplicate clause of {c.predicate} (the same as line {c.first_line})",
                    "redefined": f"{c.predicate} is defined again here, replacing an earlier file's clauses",
                    "builtin": f"{c.predicate} is a builtin and cannot be redefined"}[c.kind]
            lines.append((c.file, c.line, f"{'error' if c.kind == 'builtin' else 'warning'}: {text}"))
        for left in self.left_recursive:
            how = "declared tabled" if left.tabled else "the engine tables it"
            lines.append((left.file, left.line, f"note: {left.predicate} is left-recursive "
                                                f"({' -> '.join(left.via)}); {how}"))
        found = [f"{file}:{line}: {text}" for file, line, text in sorted(lines, key=lambda x: (x[0], x[1]))]
        return found + [f"note: {e.predicate} has side effects (its rules call {e.calls}): a goal may call it only "
                        f"with --allow {e.calls}" for e in self.effects]


def run_tool(script: Path, goal: str, path: Path, stdin: str = "", seconds: float = 60.0,
             memory_mb: int = 1024) -> tuple[dict[str, Any], dict[str, str]]:
    """Run a Prolog tool (check.pl, facts.pl) over the KB at `path` in its own swipl, bounded in time and
    memory. Returns its JSON reply and the map from each KB file's absolute path to its shown name."""
    files = kb_files(path)
    names = {str(p.resolve()): name for p, name in files}

    # Prolog threads off, as in the engine: a KB directive may not start one.
    command = [swipl_path(), "-q", f"--stack-limit={memory_mb}m", "--threads=false", "-g", goal, "-t", "halt(1)",
               str(script), "--", *names]
    if jail.status().active:  # loading runs the KB's directives: inside the jail like the engine
        read, hide = kb_view([Path(name) for name in names])
        cell = jail.Jail(read=[script.parent, *read], hide=hide, memory_mb=memory_mb + _OVERHEAD_MB,
                         cpu_seconds=int(seconds) + 5)
        process = jail.popen(cell, command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    else:
        def bound() -> None:  # runs in the child: its own session (killed as a group), address space capped
            os.setsid()
            cap = (memory_mb + _OVERHEAD_MB) * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

        process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   preexec_fn=bound)
    try:
        out, err = process.communicate(stdin.encode(), timeout=seconds)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, 9)
        process.communicate()
        raise SolverTimeout(f"kb {script.stem}: SWI-Prolog did not finish within {seconds:g} s") from None
    lines = [line[len(_REPORT):] for line in out.decode("utf-8", "replace").splitlines()
             if line.startswith(_REPORT)]
    if process.returncode != 0 or not lines:
        last = [line for line in err.decode("utf-8", "replace").splitlines() if line.strip()]
        raise ProgramExecutionError(f"kb {script.stem}: SWI-Prolog failed: "
                                    f"{last[-1] if last else process.returncode}")
    return json.loads(lines[-1]), names


def check_kb(path: Path, seconds: float = 60.0, memory_mb: int = 1024) -> CheckReport:
    """Run check.pl over the KB at `path` (a file or a folder of .pl files)."""
    raw, names = run_tool(CHECKER, "kb_check:main", path, seconds=seconds, memory_mb=memory_mb)
    for key in ("messages", "undefined", "unreachable", "discontiguous", "duplicates", "left_recursive",
                "predicates"):
        for item in raw[key]:
            item["file"] = names.get(item["file"], item["file"])
    report = CheckReport.model_validate(raw)
    if not report.failed:  # what the engine's second layer refuses, as it loads the KB for a goal
        with KnowledgeBase(path, ProofLimits(seconds=seconds, memory_mb=memory_mb, load_seconds=seconds)) as base:
            report.effects = [Effect(**e) for e in base.effects]
            # What only the engine refuses at load (a clause defining a hook SWI-Prolog would call
            # outside the sandbox): kb check fails on it as kb prove does.
            report.messages += [Message(kind=m.kind, file=m.file, line=m.line, message=m.message)
                                for m in base.errors]
    return report
