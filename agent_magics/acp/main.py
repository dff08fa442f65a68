"""``agent-magics acp``: serve the Agent Client Protocol on stdin and stdout.

stdout carries the protocol only: the protocol writes to a copy of it, and file
descriptor 1 itself then points at stderr, so anything else this process or a child it
starts would print (logs, warnings, a stray ``print``) lands in the agent's log, which
clients show, and never corrupts a message.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from typing import Any, cast

STREAM_LIMIT = 50 * 1024 * 1024
"""Largest message read (an image in a prompt), as the SDK's own default."""


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    options: dict[str, Any] = {
        "base_url": args.base_url,
        "model": args.model,
        "provider": args.provider,
        "approval_policy": args.approval_policy,
        "sandbox_mode": args.sandbox,
    }
    try:
        asyncio.run(serve(options, args.config))
    except KeyboardInterrupt:
        return 130
    return 0


async def serve(options: dict[str, Any], overrides: list[str]) -> None:
    from acp import run_agent

    from agent_magics.acp.agent import AcpAgent

    reader, writer = await protocol_streams()
    agent = AcpAgent(options, overrides)
    try:
        await run_agent(cast(Any, agent), writer, reader)
    finally:
        await agent.aclose()


class _Output(asyncio.streams.FlowControlMixin, asyncio.Protocol):
    """The protocol's side of the stdout pipe (a writer's drain waits on it)."""


async def protocol_streams() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """stdin to read messages from, and a copy of stdout to write them to; fd 1 and
    ``sys.stdout`` are stderr from then on."""
    loop = asyncio.get_running_loop()
    out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    reader = asyncio.StreamReader(limit=STREAM_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, protocol = await loop.connect_write_pipe(_Output, out)
    return reader, asyncio.StreamWriter(transport, protocol, None, loop)
