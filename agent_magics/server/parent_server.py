"""Whether a Jupyter server's URL is served by the process that started this one.

A server's runtime file (``jpserver-<pid>.json``) says where it listens, but anyone who
can write the runtime folder can write such a file, claim any pid and name any URL. The
kernel's parent process cannot be named that way: Linux's ``/proc`` lists the sockets
it holds, and its TCP tables which of them listen, on which address and port. A URL is
believed when its host resolves to an address the parent listens on at that port, or
the parent listens on every address of that address's family at that port (IPv4's
``0.0.0.0``, IPv6's ``::``; one does not cover the other: a Jupyter server's IPv6
sockets are IPv6-only) and the host is this machine (an address a socket can be bound
to here).
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import socket
from urllib.parse import urlsplit, urlunsplit

TCP_TABLES = ("/proc/net/tcp", "/proc/net/tcp6")
LISTEN = "0A"
"""A listening socket's state in Linux's TCP tables."""
INODE_FIELD = 9
DEFAULT_PORTS = {"http": 80, "https": 443}

Listening = set[tuple[str, int]]
"""Addresses and ports a process listens on."""


def _address(field: str) -> tuple[str, int]:
    """A TCP table's ``ADDRESS:PORT`` in hex (the address in the host's byte order, by
    32-bit words) as an address and a port."""
    hex_address, _, hex_port = field.rpartition(":")
    raw = bytes.fromhex(hex_address)
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    address = ipaddress.ip_address(words)
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return str(address), int(hex_port, 16)


def listening(pid: int) -> Listening | None:
    """Where process ``pid`` listens for TCP: empty when ``/proc`` shows none (or hides
    the process), None on a system without ``/proc``."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return None if not os.path.isdir("/proc/self/fd") else set()
    links = []
    for fd in fds:
        with contextlib.suppress(OSError):  # closed meanwhile (the listing's own, say)
            links.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
    sockets = {link[len("socket:[") : -1] for link in links if link.startswith("socket:[")}
    found: Listening = set()
    for table in TCP_TABLES:
        try:
            with open(table, encoding="ascii") as rows:
                lines = rows.read().splitlines()[1:]
        except OSError:
            continue
        for fields in (line.split() for line in lines):
            if len(fields) > INODE_FIELD and fields[3] == LISTEN and fields[INODE_FIELD] in sockets:
                with contextlib.suppress(ValueError):
                    found.add(_address(fields[1]))
    return found


def _here(address: str) -> bool:
    """Whether ``address`` is one of this machine's (a socket can be bound to it)."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.bind((address, 0))
    except OSError:
        return False
    return True


def _wildcard_covers(address: str, port: int, sockets: Listening) -> bool:
    """Whether a socket on every address of ``address``'s family listens at ``port``,
    and ``address`` is this machine's. An IPv6 wildcard is not taken to cover IPv4: a
    Jupyter server's sockets are IPv6-only (tornado binds them so), and another user
    could listen on the IPv4 address at that port."""
    wildcard = "::" if ":" in address else "0.0.0.0"
    return (wildcard, port) in sockets and _here(address)


def served_by(url: str, sockets: Listening) -> str | None:
    """``url`` as it reaches one of ``sockets`` (see the module's docstring), or None. A
    plain ``http://`` URL comes back with the address it was checked at in place of its
    host, so that the request goes where the check looked, whatever the name resolves to
    next; an ``https://`` one is kept as it is (its certificate names the host), when
    every address its host resolves to is checked."""
    try:
        parts = urlsplit(url)
        port = parts.port or DEFAULT_PORTS.get(parts.scheme)
        host = parts.hostname
        if port is None or host is None:
            return None
        infos = socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM)
    except (OSError, ValueError, UnicodeError):
        return None
    checked = [a for a in dict.fromkeys(str(i[4][0]) for i in infos)
               if (a, port) in sockets or _wildcard_covers(a, port, sockets)]  # fmt: skip
    if parts.scheme == "https":
        return url if checked and len(checked) == len({str(i[4][0]) for i in infos}) else None
    if parts.scheme != "http" or not checked:
        return None
    address = f"[{checked[0]}]" if ":" in checked[0] else checked[0]
    return urlunsplit(parts._replace(netloc=f"{address}:{port}"))
