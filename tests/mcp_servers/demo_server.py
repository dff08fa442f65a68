"""An MCP server for the tests, written with the SDK's ``MCPServer``.

Run it over stdio (the default) or over streamable HTTP on 127.0.0.1 (``--http``:
it binds a free port, prints ``listening on <port>`` once it accepts connections,
then serves). Faults on demand: ``--exit-at-start CODE`` writes a line to stderr and
exits before answering anything; ``--noise`` prints a line that is not JSON-RPC
on stdout first.
"""

from __future__ import annotations

import argparse
import base64
import os
import socket
import sys
import threading

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.types import Image
from mcp.types import ToolAnnotations

# A 1x1 transparent PNG.
PIXEL_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)

server = MCPServer("demo", instructions="A server for the agent_magics tests.")


@server.tool()
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


@server.tool(structured_output=False)
def echo(text: str) -> str:
    """Answers the text it was given."""
    return text


@server.tool()
def pixel(caption: str = "a pixel") -> list[str | Image]:
    """Answers a caption and a one-pixel PNG image."""
    return [caption, Image(data=PIXEL_PNG, format="png")]


@server.tool()
def fail(message: str) -> str:
    """Always fails with the given message."""
    raise ToolError(message)


@server.tool()
def crash(code: int = 7) -> str:
    """Ends the server process at once."""
    sys.stderr.write(f"crashing on purpose with code {code}\n")
    sys.stderr.flush()
    os._exit(code)


@server.tool()
def exit_soon(code: int = 5, seconds: float = 0.2) -> str:
    """Answers, then ends the server a moment later."""
    threading.Timer(seconds, os._exit, (code,)).start()
    return "bye"


@server.tool()
async def slow(seconds: float) -> str:
    """Waits, then answers."""
    await anyio.sleep(seconds)
    return f"waited {seconds}s"


@server.tool(structured_output=False)
def env_names() -> str:
    """Answers the names of the environment variables the server sees, one a line."""
    return "\n".join(sorted(os.environ))


@server.tool(structured_output=False)
def cwd() -> str:
    """Answers the folder the server runs in."""
    return os.getcwd()


@server.tool(structured_output=False)
def header(name: str, ctx: Context) -> str:
    """Answers an HTTP header of the request (streamable HTTP only)."""
    request = ctx.request_context.request
    headers = getattr(request, "headers", None)
    return "" if headers is None else headers.get(name, "")


@server.tool(
    annotations=ToolAnnotations(
        title="Look up a word", read_only_hint=True, destructive_hint=False, open_world_hint=False
    )
)
def lookup(word: str) -> str:
    """Looks a word up in a tiny dictionary."""
    return {"mcp": "Model Context Protocol"}.get(word, "unknown")


@server.resource("demo://greeting", name="greeting", mime_type="text/plain")
def greeting() -> str:
    """A short greeting."""
    return "hello from demo"


@server.resource("demo://items/{item_id}", name="item", mime_type="application/json")
def item(item_id: str) -> str:
    """One item by its id."""
    return f'{{"id":"{item_id}"}}'


async def serve_http() -> None:
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    app = server.streamable_http_app(host="127.0.0.1")
    config = uvicorn.Config(app, log_level="warning")
    print(f"listening on {sock.getsockname()[1]}", flush=True)
    await uvicorn.Server(config).serve(sockets=[sock])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", action="store_true")
    parser.add_argument("--exit-at-start", type=int)
    parser.add_argument("--noise", action="store_true")
    args = parser.parse_args()
    if args.exit_at_start is not None:
        sys.stderr.write("starting the demo server\n")
        sys.stderr.write("fatal: the demo server was told to exit\n")
        sys.exit(args.exit_at_start)
    if args.noise:
        print("some noise on stdout", flush=True)
    if args.http:
        anyio.run(serve_http)
    else:
        server.run()


if __name__ == "__main__":
    main()
