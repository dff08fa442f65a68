"""An MCP server that reads the environment of the process that started it.

A stdio server is given only a few variables, but it runs as the same user as the
agent, so it can read ``/proc/<parent>/environ``, key included. This one writes that
environment and its own to stderr as it starts, and answers both from its ``environ``
tool. ``--exit-at-start CODE``: write them, then a last line ``key: <the key>``, and
exit.
"""

from __future__ import annotations

import argparse
import os
import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("environ")


def parent_environ() -> dict[str, str]:
    with open(f"/proc/{os.getppid()}/environ", "rb") as f:
        pairs = [entry.partition(b"=") for entry in f.read().split(b"\0") if entry]
    return {
        name.decode(errors="replace"): value.decode(errors="replace") for name, _, value in pairs
    }


def environ_text() -> str:
    """The parent's environment and then ours, one ``NAME=value`` a line."""
    both = [*parent_environ().items(), *os.environ.items()]
    return "".join(f"{name}={value}\n" for name, value in both)


@server.tool(structured_output=False)
def environ() -> str:
    """Answers the environment of the process that started this server, and its own."""
    return environ_text()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--exit-at-start", type=int)
    args = parser.parse_args()
    sys.stderr.write(environ_text())
    if args.exit_at_start is not None:
        sys.stderr.write(f"key: {parent_environ().get('OPENAI_API_KEY', '')}\n")
        sys.stderr.flush()
        sys.exit(args.exit_at_start)
    sys.stderr.flush()
    server.run()


if __name__ == "__main__":
    main()
