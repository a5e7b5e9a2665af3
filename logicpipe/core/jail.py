"""The operating-system jail: the third layer around a process that runs text a model wrote.

The language layers (the KB whitelist, library(sandbox), our own parsers) decide what a program may
call; this layer decides what the process can do whatever it calls, so an escape through a door those
layers miss stays harmless. It is built from three kernel mechanisms, each through a well-kept tool:

- **bubblewrap** (Debian's `bubblewrap`, the sandbox of Flatpak): new user, pid, network, IPC, UTS and
  cgroup namespaces, no capabilities, a read-only view of only the paths the program needs (no home
  folder, so no keys to read), a private, size-bounded /tmp, and the writable folders it is given (the
  engine that answers goals has none). It needs no daemon and no root, and it is one apt package on
  every Debian and Ubuntu.
- **seccomp** (filters compiled by libseccomp, the library systemd and bubblewrap themselves use): no
  new processes (fork, vfork, clone without CLONE_THREAD), no socket at all, no memfd, no changing its
  own limits, no mounts, namespaces, ptrace or kernel keyrings (loaded by bubblewrap); and no `execve`
  after the program's own (loaded by the launcher, `landlock_exec.py`, which makes that one call).
- **Landlock** (where the kernel has it): only the program (and the dynamic linker the kernel loads it
  with) can be executed; files may be written only in the folders given to it (none for the KB
  engine); no TCP connection. Bubblewrap cannot apply it (Landlock forbids the mounts bubblewrap
  makes), so the launcher does, inside the jail, just before it executes the program.
- **rlimits**: CPU seconds, address space, file size (a write past it fails with EFBIG), open files, and
  no core dump.

`status()` probes the machine once and says which layers it can make; where it cannot make the jail (no
bwrap, no user namespaces), callers say so in one line and go on with the language layers alone, or
refuse when the user asked for the jail (`--require-jail`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import functools
import os
import resource
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .errors import PrerequisiteError

LAUNCHER = Path(__file__).with_name("landlock_exec.py")
_PR_SET_PDEATHSIG = 1
_CLONE_THREAD = 0x00010000
# Set to "0" to make the jail unavailable (the tests of the fallback, and a user whose kernel misbehaves).
ENV_SWITCH = "LOGICPIPE_JAIL"


@dataclass(frozen=True)
class Jail:
    """What one jailed process may touch. Paths are bound at the same place inside the jail."""

    # A host folder the jail may write (and its working directory); without one it writes nowhere and
    # works in its private /tmp, which Landlock keeps read-only.
    folder: Path | None = None
    read: Sequence[Path] = ()  # files and folders it may read, besides the system's /usr
    hide: Sequence[Path] = ()  # files and folders under `read` it may not see (shown empty)
    write_over: Sequence[tuple[Path, Path]] = ()  # (host folder, path inside): writable views
    cpu_seconds: int = 600
    memory_mb: int = 2048  # address space
    file_mb: int = 64  # the largest file it may write (its stderr file too)
    open_files: int = 64
    tmp_mb: int = 64  # its private /tmp
    # Layers left out, for the tests that show what the others still stop: "seccomp", "landlock",
    # "network" (the host's network namespace kept), "readonly" (the `read` paths bound writable).
    off: frozenset[str] = frozenset()


@dataclass(frozen=True)
class JailStatus:
    active: bool
    layers: tuple[str, ...] = ()
    reason: str = ""  # why the jail (or a layer of it) is missing
    landlock_abi: int = 0
    missing: tuple[str, ...] = field(default=())

    def line(self) -> str:
        if not self.active:
            return f"OS jail: off ({self.reason})"
        extra = f"; missing: {', '.join(self.missing)}" if self.missing else ""
        return f"OS jail: on ({', '.join(self.layers)}{extra})"


_switched_off: list[str] = []


def switch_off(reason: str | None) -> None:
    """Run this process's programs without the jail (`logicpipe kb --no-jail`), or back with it (None)."""
    _switched_off[:] = [reason] if reason else []
    status.cache_clear()


def _landlock_abi() -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    abi = libc.syscall(444, None, 0, 1)  # landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)
    return abi if abi > 0 else 0


@functools.lru_cache(maxsize=1)
def status() -> JailStatus:
    """Which layers this machine can make, probed once per process by jailing `true`."""
    if _switched_off:
        return JailStatus(False, reason=f"switched off by {_switched_off[0]}")
    if os.environ.get(ENV_SWITCH, "1") == "0":
        return JailStatus(False, reason=f"switched off by {ENV_SWITCH}=0")
    if sys.platform != "linux":
        return JailStatus(False, reason="not Linux")
    if shutil.which("bwrap") is None:
        return JailStatus(False, reason="bubblewrap is not installed: apt-get install bubblewrap")
    if ctypes.util.find_library("seccomp") is None:
        return JailStatus(False, reason="libseccomp is not installed: apt-get install libseccomp2")
    try:
        argv, preexec, fds = command(Jail(), ["/bin/true"])
        done = subprocess.run(argv, preexec_fn=preexec, pass_fds=fds, capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return JailStatus(False, reason=f"bubblewrap cannot start: {exc}")
    finally:
        _close_filter_fds()
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip().splitlines()
        return JailStatus(False, reason=f"bubblewrap cannot make a jail here: {said[-1] if said else done.returncode}")
    abi = _landlock_abi()
    layers = ("namespaces", "seccomp", "rlimits") + (("landlock",) if abi else ())
    missing = () if abi else ("landlock (this kernel has none: writes are stopped by the read-only mounts alone)",)
    return JailStatus(True, layers, landlock_abi=abi, missing=missing)


def layers_summary() -> list[str]:
    """What guards each kind of process that runs a model's text, for `logicpipe list` and `kb check`."""
    found = status()
    return [f"kb engine: whitelist, library(sandbox); {found.line()}",
            f"lp solver (SWI-Prolog): parsed programs only; {found.line()}",
            "other solvers: parsed programs only; worker processes bounded in time, memory and CPU",
            *([f"note: {item}" for item in found.missing])]


def require(active: JailStatus | None = None) -> JailStatus:
    """The status, or a PrerequisiteError saying why there is no jail (--require-jail)."""
    found = active or status()
    if not found.active:
        raise PrerequisiteError(f"--require-jail: no OS jail on this machine ({found.reason})")
    return found


# -- seccomp ---------------------------------------------------------------------------------------

class _ArgCmp(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int), ("datum_a", ctypes.c_uint64),
                ("datum_b", ctypes.c_uint64)]


_SCMP_ACT_ALLOW = 0x7FFF0000
_SCMP_CMP_NE, _SCMP_CMP_EQ, _SCMP_CMP_MASKED_EQ = 1, 4, 7
_DENIED = ("fork", "vfork", "execveat", "memfd_create", "socket", "socketpair", "ptrace", "process_vm_readv", "process_vm_writev", "mount", "umount2",
           "pivot_root", "chroot", "unshare", "setns", "keyctl", "add_key", "request_key", "bpf",
           "perf_event_open", "userfaultfd", "setrlimit", "kexec_load", "init_module", "finit_module",
           "io_uring_setup", "open_by_handle_at", "name_to_handle_at", "move_mount", "open_tree", "fsopen",
           "fsmount", "fspick", "mount_setattr")
_filter_fds: list[int] = []


def _errno(code: int) -> int:
    return 0x00050000 | code  # SCMP_ACT_ERRNO(code)


def _seccomp_filter() -> int:
    """A file descriptor holding the compiled BPF program bubblewrap loads (--seccomp FD)."""
    lib = ctypes.CDLL(ctypes.util.find_library("seccomp") or "libseccomp.so.2", use_errno=True)
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint,
                                           ctypes.POINTER(_ArgCmp)]
    lib.seccomp_export_bpf.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    ctx = lib.seccomp_init(_SCMP_ACT_ALLOW)
    if not ctx:
        raise OSError("seccomp_init failed")

    def rule(action: int, name: str, *cmps: tuple[int, int, int, int]) -> None:
        number = lib.seccomp_syscall_resolve_name(name.encode())
        if number < 0:
            return  # not a system call on this architecture
        array = (_ArgCmp * max(1, len(cmps)))(*[_ArgCmp(*c) for c in cmps])
        if lib.seccomp_rule_add_array(ctx, action, number, len(cmps), array) < 0:
            raise OSError(f"seccomp rule for {name} refused")

    try:
        for name in _DENIED:
            rule(_errno(errno.EPERM), name)
        # prlimit64 with a new limit (arg 2 not NULL) changes a limit; reading one stays allowed.
        rule(_errno(errno.EPERM), "prlimit64", (2, _SCMP_CMP_NE, 0, 0))
        # clone3 hides its flags in a struct seccomp cannot read: ENOSYS makes glibc fall back to clone.
        rule(_errno(errno.ENOSYS), "clone3")
        # A thread (CLONE_THREAD) yes, a process no: SWI-Prolog's time limits need its alarm thread,
        # which library(time) starts even with --threads=false (that flag keeps Prolog threads off).
        rule(_errno(errno.EPERM), "clone", (0, _SCMP_CMP_MASKED_EQ, _CLONE_THREAD, 0))
        fd = os.memfd_create("logicpipe-seccomp", 0)
        if lib.seccomp_export_bpf(ctx, fd) < 0:
            os.close(fd)
            raise OSError("seccomp_export_bpf failed")
        os.lseek(fd, 0, os.SEEK_SET)
        return fd
    finally:
        lib.seccomp_release(ctx)


def _close_filter_fds() -> None:
    while _filter_fds:
        try:
            os.close(_filter_fds.pop())
        except OSError:
            pass


# -- the command ---------------------------------------------------------------------------------

def _system_binds() -> list[str]:
    """The system's programs and libraries, read-only, as this machine lays them out (merged /usr or
    not); /etc only for the dynamic linker's cache and the locale."""
    args = ["--ro-bind", "/usr", "/usr"]
    for top in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        path = Path("/") / top
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            args += ["--ro-bind", str(path), str(path)]
    for etc in ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/localtime"):
        args += ["--ro-bind-try", etc, etc]
    return args


def _python_binds() -> list[str]:
    """The launcher's interpreter (a Python outside /usr, such as pyenv's, is bound read-only)."""
    prefix = Path(sys.base_prefix).resolve()
    return [] if str(prefix).startswith("/usr/") else ["--ro-bind", str(prefix), str(prefix)]


def command(jail: Jail, argv: Sequence[str]) -> tuple[list[str], Callable[[], None], tuple[int, ...]]:
    """(argv, preexec_fn, pass_fds) for subprocess.Popen: `argv` run inside the jail."""
    fd = _seccomp_filter()
    _filter_fds.append(fd)
    folder = str(Path(jail.folder).resolve()) if jail.folder else ""
    home = folder or "/tmp"
    args = ["bwrap", "--unshare-all", *(["--share-net"] if "network" in jail.off else []), "--unshare-user",
            "--die-with-parent", "--new-session", "--as-pid-1", "--cap-drop", "ALL", "--uid", "65534", "--gid",
            "65534", "--disable-userns", "--clearenv", "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "LANG",
            "C.UTF-8", *[arg for name in ("HOME", "TMPDIR", "TMP", "TEMP") for arg in ("--setenv", name, home)],
            *_system_binds(), *_python_binds(), "--proc", "/proc", "--dev", "/dev",
            "--size", str(jail.tmp_mb * 1024 * 1024), "--tmpfs", "/tmp"]
    for path in jail.read:
        resolved = str(Path(path).resolve())
        args += ["--bind" if "readonly" in jail.off else "--ro-bind", resolved, resolved]
    for path in jail.hide:
        resolved = str(Path(path).resolve())
        args += ["--tmpfs", resolved] if Path(resolved).is_dir() else ["--ro-bind", "/dev/null", resolved]
    if folder:
        args += ["--bind", folder, folder]
    for host, inside in jail.write_over:
        args += ["--bind", str(Path(host).resolve()), str(inside)]
    args += ["--chdir", home, *([] if "seccomp" in jail.off else ["--seccomp", str(fd)]), "--"]
    program = str(Path(shutil.which(argv[0]) or argv[0]).resolve())
    abi = 0 if "landlock" in jail.off else _landlock_abi()
    once = "seccomp" not in jail.off
    if abi or once:
        # Not /tmp: the folders bound under it (the jail's own among them) would be writable through it.
        writable = [*([folder] if folder else []), *(str(inside) for _, inside in jail.write_over)]
        args[-1:-1] = ["--ro-bind", str(LAUNCHER), str(LAUNCHER)]
        args += [str(Path(sys.executable).resolve()), "-I", "-S", str(LAUNCHER), str(abi), str(int(once)), program,
                 ":".join(writable), "--"]
    args += [program, *argv[1:]]
    limits = jail

    def cap(kind: int, soft: int, hard: int) -> None:
        # Never above a limit the caller already has (a solver worker's own), which it could not raise.
        held = resource.getrlimit(kind)[1]
        if held != resource.RLIM_INFINITY:
            soft, hard = min(soft, held), min(hard, held)
        resource.setrlimit(kind, (soft, hard))

    def preexec() -> None:  # in the child, before bubblewrap starts: limits every process inside inherits
        os.setsid()
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        address = limits.memory_mb * 1024 * 1024
        cap(resource.RLIMIT_AS, address, address)
        cap(resource.RLIMIT_CPU, limits.cpu_seconds, limits.cpu_seconds + 1)
        size = limits.file_mb * 1024 * 1024
        cap(resource.RLIMIT_FSIZE, size, size)
        cap(resource.RLIMIT_NOFILE, limits.open_files, limits.open_files)
        cap(resource.RLIMIT_CORE, 0, 0)
        # A write past the file-size limit fails with EFBIG (an error the program reports) rather than
        # killing it; an ignored signal stays ignored across exec.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

    return args, preexec, (fd,)


def popen(jail: Jail, argv: Sequence[str], **kwargs: object) -> subprocess.Popen:
    """subprocess.Popen of `argv` inside the jail (stdin, stdout, stderr as given)."""
    args, preexec, fds = command(jail, argv)
    try:
        return subprocess.Popen(args, preexec_fn=preexec, pass_fds=fds, **kwargs)  # type: ignore[call-overload]
    finally:
        _close_filter_fds()
