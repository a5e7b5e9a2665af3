"""Run inside the jail (`python -I -S landlock_exec.py ABI ONCE PROGRAM WRITABLE -- ARGV...`): restrict this
process with Landlock and one more seccomp filter, then execute PROGRAM, the last program it runs.

Landlock rules are allow-lists that every later process inherits and none can lift: read anything the
jail shows; execute PROGRAM and the dynamic linker the kernel loads it with; create, write or remove
files only beneath the WRITABLE folders (colon-separated, maybe none); no TCP bind or connect (ABI 4+);
no abstract Unix socket or signal beyond the jail (ABI 6+). ABI 0: no Landlock (the kernel has none).

The dynamic linker can also be run as a program (`ld.so /usr/bin/python3`), which Landlock cannot tell
apart, so `execve` itself is closed: the seccomp filter loaded here allows it only with the very
address of this launcher's copy of PROGRAM's path, the one call below; any later `execve` (from code
whose addresses are its own) and every `execveat` fail (ONCE 1; 0 leaves it out). It imports nothing but ctypes and os, and runs
before any model-written text is read.
"""

import ctypes
import os
import sys

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446
_SCMP_ACT_ALLOW, _SCMP_ACT_EPERM, _SCMP_CMP_NE = 0x7FFF0000, 0x00050000 | 1, 1
_PATH_BENEATH = 1
_EXECUTE, _WRITE_FILE, _READ_FILE, _READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_FS_BITS = {1: 13, 2: 14, 3: 15, 4: 15, 5: 16}  # handled file-system rights per ABI (5 and later: 16)


class _Ruleset(ctypes.Structure):
    _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class _ArgCmp(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int), ("datum_a", ctypes.c_uint64),
                ("datum_b", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed", ctypes.c_uint64), ("fd", ctypes.c_int32)]


def _fail(what: str) -> None:
    sys.stderr.write(f"logicpipe jail: landlock {what} failed: {os.strerror(ctypes.get_errno())}\n")
    os._exit(126)


def main() -> None:
    abi, once, program = int(sys.argv[1]), sys.argv[2] == "1", sys.argv[3]
    writable = [folder for folder in sys.argv[4].split(":") if folder]
    argv = sys.argv[sys.argv.index("--", 5) + 1:]
    if abi:
        _landlock(abi, program, writable)
    if once:
        _exec_once(program, argv)
    os.execv(program, argv)


def _landlock(abi: int, program: str, writable: list[str]) -> None:
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


def _exec_once(program: str, argv: list[str]) -> None:
    path = ctypes.create_string_buffer(program.encode())
    seccomp = ctypes.CDLL("libseccomp.so.2", use_errno=True)
    seccomp.seccomp_init.restype = ctypes.c_void_p
    seccomp.seccomp_init.argtypes = [ctypes.c_uint32]
    seccomp.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint,
                                               ctypes.POINTER(_ArgCmp)]
    seccomp.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    seccomp.seccomp_load.argtypes = [ctypes.c_void_p]
    context = seccomp.seccomp_init(_SCMP_ACT_ALLOW)
    other = (_ArgCmp * 1)(_ArgCmp(0, _SCMP_CMP_NE, ctypes.addressof(path), 0))
    execve = seccomp.seccomp_syscall_resolve_name(b"execve")
    execveat = seccomp.seccomp_syscall_resolve_name(b"execveat")
    if (not context or seccomp.seccomp_rule_add_array(context, _SCMP_ACT_EPERM, execve, 1, other) < 0
            or seccomp.seccomp_rule_add_array(context, _SCMP_ACT_EPERM, execveat, 0, other) < 0
            or seccomp.seccomp_load(context) < 0):
        _fail("seccomp")
    arguments = (ctypes.c_char_p * (len(argv) + 1))(*[a.encode() for a in argv], None)
    environment = [f"{k}={v}".encode() for k, v in os.environ.items()]
    variables = (ctypes.c_char_p * (len(environment) + 1))(*environment, None)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.execve.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    libc.execve(ctypes.addressof(path), arguments, variables)
    _fail(f"execve {program}")


if __name__ == "__main__":
    main()
