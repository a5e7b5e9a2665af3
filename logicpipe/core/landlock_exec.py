"""Run inside the jail (`python -I -S landlock_exec.py ABI PROGRAM WRITABLE -- ARGV...`): restrict this
process with Landlock, then execute PROGRAM, the only program it may ever execute.

Landlock rules are allow-lists that every later process inherits and none can lift: read anything the
jail shows; execute PROGRAM and the dynamic linker alone (so `execve` of anything else fails once
PROGRAM runs); create, write or remove files only beneath the WRITABLE folders (colon-separated); no TCP
bind or connect (ABI 4+); no abstract Unix socket or signal beyond the jail (ABI 6+). It imports nothing
but the standard library's ctypes and os, and runs before any model-written text is read.
"""

import ctypes
import os
import sys

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446
_PATH_BENEATH = 1
_EXECUTE, _WRITE_FILE, _READ_FILE, _READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_FS_BITS = {1: 13, 2: 14, 3: 15, 4: 15, 5: 16}  # handled file-system rights per ABI (5 and later: 16)


class _Ruleset(ctypes.Structure):
    _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed", ctypes.c_uint64), ("fd", ctypes.c_int32)]


def _fail(what: str) -> None:
    sys.stderr.write(f"logicpipe jail: landlock {what} failed: {os.strerror(ctypes.get_errno())}\n")
    os._exit(126)


def main() -> None:
    abi, program, writable = int(sys.argv[1]), sys.argv[2], sys.argv[3].split(":")
    argv = sys.argv[sys.argv.index("--", 4) + 1:]
    libc = ctypes.CDLL(None, use_errno=True)
    every = (1 << _FS_BITS.get(abi, 16)) - 1
    ruleset = _Ruleset(every, 0b11 if abi >= 4 else 0, 0b11 if abi >= 6 else 0)
    size = 8 if abi < 4 else 16 if abi < 6 else 24
    fd = libc.syscall(_CREATE_RULESET, ctypes.byref(ruleset), size, 0)
    if fd < 0:
        _fail("create_ruleset")

    def allow(path: str, rights: int) -> None:
        try:
            target = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            return  # not in this jail
        rule = _PathBeneath(rights, target)
        if libc.syscall(_ADD_RULE, fd, _PATH_BENEATH, ctypes.byref(rule), 0) < 0:
            _fail(f"add_rule {path}")
        os.close(target)

    allow("/", _READ_FILE | _READ_DIR)
    allow("/dev/null", _READ_FILE | _WRITE_FILE)
    for folder in writable:
        allow(folder, every & ~_EXECUTE)
    # The program and the dynamic linker the kernel opens for it (each architecture names its own).
    for path in (program, "/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1"):
        if os.path.exists(path):
            allow(os.path.realpath(path), _EXECUTE | _READ_FILE)
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS, which Landlock needs (bubblewrap sets it too)
        _fail("no_new_privs")
    if libc.syscall(_RESTRICT_SELF, fd, 0) != 0:
        _fail("restrict_self")
    os.close(fd)
    os.execv(program, argv)


if __name__ == "__main__":
    main()
