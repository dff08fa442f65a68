"""Run a command confined by Landlock (reads and writes) and seccomp (network).

    python -I -S landlock_exec.py [--read PATH]... [--rw PATH]... [--no-network]
        [--seccomp-only] -- CMD...

The process restricts itself, then forks: the child execs ``CMD``, so the command and
everything it starts inherit the restrictions and nothing can lift them again. The
parent stays as a child subreaper: every process the command leaves behind, also one
that left its session with ``setsid``, is re-parented to it and killed when the command
ends (as bubblewrap's PID namespace does). Writes are allowed only beneath the ``--rw``
paths (plus a few harmless devices such as ``/dev/null``); reading files and running
programs only beneath the ``--read`` paths, while every folder can be listed (a rule on
``/``): names are not secret, contents may be.

``--no-network`` installs a seccomp filter in the spirit of Codex's: no ``socket()`` of
any family, ``socketpair()`` of Unix sockets only, no ``connect``, ``bind``, ``listen``,
``accept``, and no ``io_uring``. A command can then reach no daemon through a Unix
socket file (``docker.sock``, ``$SSH_AUTH_SOCK``, D-Bus), while pipes, PTYs and
connected socket pairs (Python's ``multiprocessing``) keep working. Landlock adds TCP
rules (ABI >= 4) and scopes abstract Unix sockets (ABI >= 6).

``--seccomp-only`` applies just that filter and execs in place: bubblewrap runs the
launcher this way inside its own namespaces, which already confine writes and processes.

This file imports only the standard library and never the package, so it starts fast
when run by path with ``-I -S``. A setup failure exits with status 1 and a message
naming Landlock: the command never runs unconfined.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
import struct
import sys

SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1

FS_EXECUTE, FS_READ_FILE, FS_READ_DIR = 1 << 0, 1 << 2, 1 << 3
FS_WRITE_FILE = 1 << 1
FS_REMOVE_DIR = 1 << 4
FS_REMOVE_FILE = 1 << 5
FS_MAKE_ALL = sum(1 << bit for bit in range(6, 13))  # char, dir, reg, sock, fifo, block, sym
FS_REFER = 1 << 13  # ABI 2
FS_TRUNCATE = 1 << 14  # ABI 3
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1  # ABI 4
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1  # ABI 6

FILE_RIGHTS_MASK = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE
"""The rights a rule on a file (not a folder) may carry."""
FS_READ = FS_EXECUTE | FS_READ_FILE
"""What a ``--read`` path grants beneath it."""
LISTED = "/"
"""Where folders can be listed: everywhere."""
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx", "/dev/pts")

PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
PR_SET_CHILD_SUBREAPER = 36
AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
DENIED_SYSCALLS = {
    # socket, connect, accept, bind, listen, accept4, io_uring_setup
    "x86_64": (41, 42, 43, 49, 50, 288, 425),
    "aarch64": (198, 203, 202, 200, 201, 242, 425),
}
SOCKETPAIR = {"x86_64": 53, "aarch64": 199}
X32_BIT = 0x40000000
AF_UNIX = 1
SIG_DFL, SIG_IGN = 0, 1
SIGPIPE, SIGXFSZ = 13, 25  # the same numbers on x86_64 and aarch64
SIGHUP, SIGINT, SIGQUIT, SIGKILL, SIGTERM = 1, 2, 3, 9, 15
SIGTSTP, SIGTTIN, SIGTTOU = 20, 21, 22
SUPERVISOR_IGNORES = (SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGTSTP, SIGTTIN, SIGTTOU)
"""Signals the supervisor leaves to the command (they reach it through its group)."""
RET_ALLOW, RET_EPERM = 0x7FFF0000, 0x00050000 | errno.EPERM

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
RULE = struct.Struct("=Qi")  # landlock_path_beneath_attr, packed
_rule = ctypes.create_string_buffer(RULE.size)
"""One buffer for every rule: a new one per rule doubled the cost of a rule."""


class _SetupError(Exception):
    """The sandbox could not be put in place."""


def _check(result: int, what: str) -> int:
    if result < 0:
        code = ctypes.get_errno()
        raise _SetupError(f"{what}: {os.strerror(code)} (os error {code})")
    return result


def abi_version() -> int:
    """The kernel's Landlock ABI version, 0 when Landlock is absent or disabled."""
    result = _libc.syscall(SYS_CREATE_RULESET, None, ctypes.c_size_t(0), CREATE_RULESET_VERSION)
    return max(int(result), 0)


def handled_fs(abi: int) -> int:
    """The rights this ABI can restrict: reading, running, writing."""
    rights = FS_READ | FS_READ_DIR | FS_WRITE_FILE | FS_REMOVE_DIR | FS_REMOVE_FILE | FS_MAKE_ALL
    if abi >= 2:
        rights |= FS_REFER
    if abi >= 3:
        rights |= FS_TRUNCATE
    return rights


def _add_path(ruleset: int, path: str, rights: int, follow: bool = True) -> None:
    """Grant ``rights`` beneath ``path`` (a file: its file rights); ``follow=False``: a
    path that is a symlink by now grants nothing (a rule would land on its target)."""
    flags = os.O_PATH | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError:
        return  # a root that does not exist grants nothing
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISLNK(mode):
            return
        if not stat.S_ISDIR(mode):
            rights &= FILE_RIGHTS_MASK
        RULE.pack_into(_rule, 0, rights, fd)
        if _libc.syscall(SYS_ADD_RULE, ruleset, RULE_PATH_BENEATH, _rule, 0) < 0:
            _check(-1, f"rule {path}")
    finally:
        os.close(fd)


def restrict(readable: list[str], writable: list[str], network: bool, abi: int) -> None:
    """Confine this process's reads to ``readable`` (every folder stays listable), its
    writes to ``writable``, and TCP when ``network`` is off."""
    if abi < 1:
        raise _SetupError("Landlock is not available in this kernel")
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
        _add_path(ruleset, LISTED, FS_READ_DIR)
        for path in readable:
            _add_path(ruleset, path, FS_READ, follow=False)
        for path in writable:  # writing only: reading comes from the rules above
            _add_path(ruleset, path, fs & ~(FS_READ | FS_READ_DIR))
        for device in DEVICES:
            _add_path(ruleset, device, FS_WRITE_FILE | (FS_TRUNCATE if abi >= 3 else 0))
        _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
        _check(_libc.syscall(SYS_RESTRICT_SELF, ruleset, 0), "restrict_self")
    finally:
        os.close(ruleset)


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def seccomp_program(machine: str) -> bytes:
    """A BPF filter: the syscalls of ``DENIED_SYSCALLS``, ``socketpair`` of any family
    but ``AF_UNIX``, and foreign/x32 syscalls get EPERM; everything else is allowed."""
    arch = AUDIT_ARCH[machine]
    denied = DENIED_SYSCALLS[machine]
    ld, jeq, jge, ret = 0x20, 0x15, 0x35, 0x06
    deny = 7 + len(denied)  # index of the EPERM return; the allow return follows it
    code = [
        (ld, 0, 0, 4),  # arch
        (jeq, 0, deny - 2, arch),  # foreign arch -> deny
        (ld, 0, 0, 0),  # syscall number
        (jge, deny - 4, 0, X32_BIT),  # x32 -> deny
    ]
    for nr in denied:
        code.append((jeq, deny - len(code) - 1, 0, nr))
    code.append((jeq, 0, deny - len(code), SOCKETPAIR[machine]))  # not socketpair -> allow
    code.append((ld, 0, 0, 16))  # socketpair's domain (low word of args[0])
    code.append((jeq, 1, 0, AF_UNIX))  # AF_UNIX -> allow
    code += [(ret, 0, 0, RET_EPERM), (ret, 0, 0, RET_ALLOW)]
    return b"".join(_insn(*insn) for insn in code)


class _SockFprog(ctypes.Structure):
    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_void_p))


def block_network() -> None:
    """Install the seccomp filter of :func:`seccomp_program` on this process."""
    machine = os.uname().machine
    if machine not in AUDIT_ARCH:
        raise _SetupError(f"no seccomp network filter for {machine}")
    code = seccomp_program(machine)
    buf = ctypes.create_string_buffer(code, len(code))
    prog = _SockFprog(len(code) // 8, ctypes.addressof(buf))
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    _check(_libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0), "seccomp")


def parse(args: list[str]) -> tuple[list[str], list[str], bool, bool, list[str]]:
    """``(readable paths, writable roots, network allowed, seccomp only, command)`` from
    the arguments."""
    readable: list[str] = []
    writable: list[str] = []
    network, seccomp_only = True, False
    while args and args[0] != "--":
        flag = args.pop(0)
        if flag == "--read" and args:
            readable.append(args.pop(0))
        elif flag == "--rw" and args:
            writable.append(args.pop(0))
        elif flag == "--no-network":
            network = False
        elif flag == "--seccomp-only":
            seccomp_only = True
        else:
            raise _SetupError(f"unknown argument {flag!r}")
    if len(args) < 2:
        raise _SetupError("no command given after --")
    return readable, writable, network, seccomp_only, args[1:]


def _set_signals(signals: tuple[int, ...], action: int) -> None:
    # libc's signal() directly: the signal module would import enum, slowing every start.
    for sig in signals:
        _libc.signal(sig, ctypes.c_void_p(action))


def _exec(command: list[str]) -> int:
    # Python ignores SIGPIPE and SIGXFSZ; an ignored signal stays ignored across exec.
    _set_signals((SIGPIPE, SIGXFSZ, *SUPERVISOR_IGNORES), SIG_DFL)
    # os.execvp would import warnings (a millisecond per command): search PATH here.
    name = command[0]
    found: OSError = FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT))
    folders = [""] if "/" in name else os.environ.get("PATH", os.defpath).split(os.pathsep)
    for folder in folders:
        try:
            os.execv(os.path.join(folder, name), command)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as exc:
            found = exc  # e.g. EACCES: remembered, the search goes on as execvp's does
    sys.stderr.write(f"{name}: {found.strerror}\n")
    return 126 if found.errno == errno.EACCES else 127


def _children() -> list[int]:
    """Processes whose parent is this one (zombies included), from ``/proc``: the
    kernel's list of this (single-threaded) process's children, else a scan."""
    me, found = os.getpid(), []
    try:
        with open(f"/proc/{me}/task/{me}/children", "rb") as f:
            return [int(pid) for pid in f.read().split()]
    except OSError:
        pass  # a kernel without CONFIG_PROC_CHILDREN
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1 and int(fields[1]) == me:
            found.append(int(entry))
    return found


def _kill_descendants() -> None:
    """Kill every child, reap it, and repeat with the orphans it leaves to this
    subreaper, until none is left."""
    while kids := _children():
        for pid in kids:
            try:
                os.kill(pid, SIGKILL)
            except OSError:  # gone already
                continue
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def supervise(command: list[str]) -> int:
    """Run ``command`` in a child, reap orphans until it ends, then end what it left."""
    _check(_libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), "child subreaper")
    _set_signals(SUPERVISOR_IGNORES, SIG_IGN)
    leader = os.fork()
    if leader == 0:
        os._exit(_exec(command))
    while True:
        pid, status = os.waitpid(-1, 0)
        if pid == leader:
            break
    _kill_descendants()
    if os.WIFSIGNALED(status):  # die the same way, so the caller sees the signal
        sig = os.WTERMSIG(status)
        _set_signals((sig,), SIG_DFL)
        os.kill(os.getpid(), sig)
        return 128 + sig
    return os.waitstatus_to_exitcode(status)


def main(args: list[str]) -> int:
    try:
        readable, writable, network, seccomp_only, command = parse(list(args))
        if not seccomp_only:
            restrict(readable, writable, network, abi_version())
        if not network:
            block_network()
        if seccomp_only:
            return _exec(command)
        code = supervise(command)
    except _SetupError as exc:
        sys.stderr.write(f"landlock sandbox setup failed: {exc}\n")
        return 1
    sys.stderr.flush()
    os._exit(code)  # no interpreter shutdown: it would add milliseconds to every command


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
