"""Run a command confined by Landlock (writes) and seccomp (network), then exec it.

    python -I -S landlock_exec.py [--rw PATH]... [--no-network] -- COMMAND [ARG]...

The process restricts itself and then replaces itself with ``COMMAND``, so the command
and everything it starts inherit the restrictions; nothing can lift them again. Writes
are allowed only beneath the ``--rw`` paths (plus a few harmless devices such as
``/dev/null``); reads and program execution stay allowed everywhere. ``--no-network``
refuses every socket that is not a Unix socket (seccomp), TCP bind/connect (Landlock
ABI >= 4), abstract Unix sockets of other programs (ABI >= 6) and ``io_uring``.

This file imports only the standard library and never the package, so it starts fast
when run by path with ``-I -S``. A setup failure exits with status 1 and a message
naming Landlock: the command never runs unconfined.
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct
import sys

SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1

FS_WRITE_FILE = 1 << 1
FS_REMOVE_DIR = 1 << 4
FS_REMOVE_FILE = 1 << 5
FS_MAKE_ALL = sum(1 << bit for bit in range(6, 13))  # char, dir, reg, sock, fifo, block, sym
FS_REFER = 1 << 13  # ABI 2
FS_TRUNCATE = 1 << 14  # ABI 3
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1  # ABI 4
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1  # ABI 6

FILE_RIGHTS_MASK = FS_WRITE_FILE | FS_TRUNCATE
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx", "/dev/pts")

PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
SYSCALLS = {"x86_64": (41, 425), "aarch64": (198, 425)}  # socket, io_uring_setup
X32_BIT = 0x40000000
AF_UNIX = 1
SIGPIPE, SIGXFSZ, SIG_DFL = 13, 25, 0  # the same numbers on x86_64 and aarch64
RET_ALLOW, RET_EPERM = 0x7FFF0000, 0x00050000 | errno.EPERM

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


class SetupError(Exception):
    """The sandbox could not be put in place."""


def _check(result: int, what: str) -> int:
    if result < 0:
        code = ctypes.get_errno()
        raise SetupError(f"{what}: {os.strerror(code)} (os error {code})")
    return result


def abi_version() -> int:
    """The kernel's Landlock ABI version, 0 when Landlock is absent or disabled."""
    result = _libc.syscall(SYS_CREATE_RULESET, None, ctypes.c_size_t(0), CREATE_RULESET_VERSION)
    return max(int(result), 0)


def handled_fs(abi: int) -> int:
    """The write rights this ABI can restrict (reads and execution are never handled)."""
    rights = FS_WRITE_FILE | FS_REMOVE_DIR | FS_REMOVE_FILE | FS_MAKE_ALL
    if abi >= 2:
        rights |= FS_REFER
    if abi >= 3:
        rights |= FS_TRUNCATE
    return rights


def _add_path(ruleset: int, path: str, rights: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # a root that does not exist grants nothing
    try:
        if not os.path.isdir(path):
            rights &= FILE_RIGHTS_MASK
        attr = struct.pack("=Qi", rights, fd)  # landlock_path_beneath_attr, packed
        buf = ctypes.create_string_buffer(attr, len(attr))
        _check(_libc.syscall(SYS_ADD_RULE, ruleset, RULE_PATH_BENEATH, buf, 0), f"rule {path}")
    finally:
        os.close(fd)


def restrict_writes(writable: list[str], network: bool, abi: int) -> None:
    """Confine this process's writes to ``writable`` (and TCP when ``network`` is off)."""
    if abi < 1:
        raise SetupError("Landlock is not available in this kernel")
    fs = handled_fs(abi)
    net = NET_BIND_TCP | NET_CONNECT_TCP if abi >= 4 and not network else 0
    scoped = 0
    if abi >= 6:
        scoped = SCOPE_SIGNAL | (0 if network else SCOPE_ABSTRACT_UNIX_SOCKET)
    if abi >= 6:
        attr = struct.pack("=QQQ", fs, net, scoped)
    elif abi >= 4:
        attr = struct.pack("=QQ", fs, net)
    else:
        attr = struct.pack("=Q", fs)
    buf = ctypes.create_string_buffer(attr, len(attr))
    ruleset = _check(
        _libc.syscall(SYS_CREATE_RULESET, buf, ctypes.c_size_t(len(attr)), 0), "ruleset"
    )
    try:
        for path in writable:
            _add_path(ruleset, path, fs)
        for device in DEVICES:
            _add_path(ruleset, device, FS_WRITE_FILE | (FS_TRUNCATE if abi >= 3 else 0))
        _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
        _check(_libc.syscall(SYS_RESTRICT_SELF, ruleset, 0), "restrict_self")
    finally:
        os.close(ruleset)


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def seccomp_program(machine: str) -> bytes:
    """A BPF filter: non-Unix sockets, ``io_uring`` and foreign/x32 syscalls get EPERM."""
    arch = AUDIT_ARCH[machine]
    socket_nr, uring_nr = SYSCALLS[machine]
    ld, jeq, jge, ret = 0x20, 0x15, 0x35, 0x06
    return b"".join(
        (
            _insn(ld, 0, 0, 4),  # 0: arch
            _insn(jeq, 0, 6, arch),  # 1: foreign arch -> 8 (deny)
            _insn(ld, 0, 0, 0),  # 2: syscall number
            _insn(jge, 4, 0, X32_BIT),  # 3: x32 -> 8
            _insn(jeq, 3, 0, uring_nr),  # 4: io_uring_setup -> 8
            _insn(jeq, 0, 3, socket_nr),  # 5: not socket() -> 9 (allow)
            _insn(ld, 0, 0, 16),  # 6: socket's domain (low word of args[0])
            _insn(jeq, 1, 0, AF_UNIX),  # 7: AF_UNIX -> 9
            _insn(ret, 0, 0, RET_EPERM),  # 8
            _insn(ret, 0, 0, RET_ALLOW),  # 9
        )
    )


class _SockFprog(ctypes.Structure):
    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_void_p))


def block_network() -> None:
    """Install the seccomp filter of :func:`seccomp_program` on this process."""
    machine = os.uname().machine
    if machine not in AUDIT_ARCH:
        raise SetupError(f"no seccomp network filter for {machine}")
    code = seccomp_program(machine)
    buf = ctypes.create_string_buffer(code, len(code))
    prog = _SockFprog(len(code) // 8, ctypes.addressof(buf))
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    _check(_libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0), "seccomp")


def parse(args: list[str]) -> tuple[list[str], bool, list[str]]:
    """``(writable roots, network allowed, command)`` from the launcher's arguments."""
    writable: list[str] = []
    network = True
    while args and args[0] != "--":
        flag = args.pop(0)
        if flag == "--rw" and args:
            writable.append(args.pop(0))
        elif flag == "--no-network":
            network = False
        else:
            raise SetupError(f"unknown argument {flag!r}")
    if len(args) < 2:
        raise SetupError("no command given after --")
    return writable, network, args[1:]


def main(args: list[str]) -> int:
    try:
        writable, network, command = parse(list(args))
        restrict_writes(writable, network, abi_version())
        if not network:
            block_network()
    except SetupError as exc:
        sys.stderr.write(f"landlock sandbox setup failed: {exc}\n")
        return 1
    # Python ignores SIGPIPE and SIGXFSZ; an ignored signal stays ignored across exec.
    # (libc's signal() directly: the signal module would import enum, slowing every start.)
    for sig in (SIGPIPE, SIGXFSZ):
        _libc.signal(sig, ctypes.c_void_p(SIG_DFL))
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        sys.stderr.write(f"{command[0]}: {exc.strerror}\n")
        return 126 if exc.errno == errno.EACCES else 127
    return 127  # not reached: execvp does not return


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
