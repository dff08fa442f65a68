"""The options ``agent-magics exec`` and ``exec review`` share, as a parent parser."""

from __future__ import annotations

import argparse
from pathlib import Path

JSONL_HELP = (
    "thread.started, turn.started, item.started/updated/completed, turn.completed or "
    "turn.failed, error; items agent_message, reasoning, command_execution, file_change, "
    "mcp_tool_call, collab_tool_call (sub-agents), web_search, todo_list, error, and ours: "
    "tool_call (every other tool, run_python included), goal, review (exec review's "
    "findings), and a thread.compacted event"
)


def common_options() -> argparse.ArgumentParser:
    """The options ``exec`` and ``exec review`` share (a parent parser)."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--base-url", help="model server URL, e.g. http://127.0.0.1:8000/v1")
    common.add_argument("-m", "--model", help="model name")
    common.add_argument(
        "--provider",
        choices=["auto", "responses", "chat", "replay"],
        help="wire protocol; auto (the default) is the Responses API; replay plays the "
        "offline demo recording",
    )
    common.add_argument(
        "--record", type=Path, metavar="PATH", help="record the session to PATH (JSONL)"
    )
    common.add_argument("-C", "--cd", type=Path, help="work in this folder")
    common.add_argument(
        "-c",
        "--config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a setting (VALUE read as TOML, else as a string); repeatable",
    )
    common.add_argument(
        "--json",
        action="store_true",
        help="write the turn to stdout as JSON lines in codex exec's event schema (the "
        "human log stays on stderr): " + JSONL_HELP,
    )
    common.add_argument(
        "-o",
        "--output-last-message",
        type=Path,
        metavar="FILE",
        help="after the turn, write the final answer's text to FILE",
    )
    return common
