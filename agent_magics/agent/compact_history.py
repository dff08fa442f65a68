"""What a compacted conversation keeps, as Codex 0.171 rebuilds it.

After a summary is made, the history becomes: the earlier messages the person wrote
(newest first within :data:`USER_MESSAGE_BUDGET` tokens, or a quarter of a smaller
model's window, the one that crosses the budget cut in its middle, then put back in
their order), the conversation's opening context
(instructions of the project, the environment) put back just above the last of them,
and last the summary as a user message after :data:`SUMMARY_PREFIX`. With OpenAI's own
compaction the server's opaque ``compaction`` item stands where the summary would.

Messages that are context rather than the person's words (the environment, AGENTS.md,
the notebook's cells, a helper's end, a goal's state) and earlier summaries are not
kept: the context is put back fresh, and an earlier summary is in the new one.
"""

from __future__ import annotations

from collections.abc import Sequence

from agent_magics.protocol.items import AnyItem, Message
from agent_magics.tools.truncate import TruncationPolicy, approx_token_count, truncate_pieces

# The two texts below are Codex's own bytes (core/templates/compact/), kept for
# conformance: a model trained on Codex's conversations knows them.
SUMMARIZATION_PROMPT = (
    "You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary for "
    "another LLM that will resume the task.\n\nInclude:\n- Current progress and key "
    "decisions made\n- Important context, constraints, or user preferences\n- What "
    "remains to be done (clear next steps)\n- Any critical data, examples, or references "
    "needed to continue\n\nBe concise, structured, and focused on helping the next LLM "
    "seamlessly continue the work.\n"
)
SUMMARY_PREFIX = (
    "Another language model started to solve this problem and produced a summary of its "
    "thinking process. You also have access to the state of the tools that were used by "
    "that language model. Use this to build on the work that has already been done and "
    "avoid duplicating work. Here is the summary produced by the other language model, "
    "use the information in this summary to assist with your own analysis:"
)
NO_SUMMARY = "(no summary available)"
USER_MESSAGE_BUDGET = 20_000
"""Tokens (four bytes each) of the person's earlier messages a compaction keeps."""
WINDOW_SHARE = 4
"""...but never more than a quarter of the window: Codex's 20,000 tokens are 7% of its
models' 272k, and would not fit at all in the 8k of a local model."""


def message_budget(window: int | None) -> int:
    """The tokens of the person's messages a compaction keeps, for a window of ``window``."""
    return USER_MESSAGE_BUDGET if not window else min(USER_MESSAGE_BUDGET, window // WINDOW_SHARE)


COMPACTION_ITEM = "compaction"
"""OpenAI's opaque item that holds a conversation compacted by the server."""

CONTEXT_OPENINGS = (
    "<environment_context>",
    "# AGENTS.md instructions for ",
    "<notebook_context>",
    "<subagent_notification>",
    "<codex_internal_context",
    "<user_instructions>",
    "<turn_aborted>",
)
"""How the user messages that are context, not the person's words, begin."""


def is_summary(text: str) -> bool:
    return text.startswith(SUMMARY_PREFIX + "\n")


def is_context(text: str) -> bool:
    return text.lstrip().startswith(CONTEXT_OPENINGS)


def _message_text(item: Message) -> str:
    if isinstance(item.content, str):
        return item.content
    parts = [str(p.get("text", "")) for p in item.content if p.get("type") == "input_text"]
    return "\n".join(p for p in parts if p)


def person_messages(history: Sequence[AnyItem]) -> list[str]:
    """The texts of the messages the person wrote (their prompts and what a front end
    said for them), oldest first; not context, not earlier summaries."""
    found = []
    for item in history:
        if isinstance(item, Message) and item.role == "user":
            text = _message_text(item)
            if text and not is_context(text) and not is_summary(text):
                found.append(text)
    return found


def summary_message(summary: str) -> Message:
    text = f"{SUMMARY_PREFIX}\n{summary}" if summary else NO_SUMMARY
    return Message.user(text)


def kept_messages(texts: Sequence[str], budget: int = USER_MESSAGE_BUDGET) -> list[Message]:
    """The newest of ``texts`` that fit in ``budget`` tokens, in their order; the one
    that crosses it cut in its middle (sent as head, marker and tail)."""
    chosen: list[Message] = []
    remaining = budget
    for text in reversed(texts):
        if remaining <= 0:
            break
        tokens = approx_token_count(text)
        if tokens <= remaining:
            chosen.append(Message.user(text))
            remaining -= tokens
            continue
        pieces = truncate_pieces(text, TruncationPolicy.tokens(remaining))
        content = [{"type": "input_text", "text": p} for p in pieces]
        chosen.append(Message(role="user", content=content))
        break
    chosen.reverse()
    return chosen


def compacted_history(
    history: Sequence[AnyItem],
    opening: Sequence[AnyItem],
    summary: AnyItem,
    budget: int = USER_MESSAGE_BUDGET,
) -> list[AnyItem]:
    """The history after a compaction of ``history``: the person's messages kept, the
    ``opening`` context just above the last of them, then ``summary`` (a summary
    message or the server's compaction item)."""
    kept: list[AnyItem] = list(kept_messages(person_messages(history), budget))
    at = len(kept) - 1 if kept else 0
    return [*kept[:at], *opening, *kept[at:], summary]


def summary_text(items: Sequence[AnyItem]) -> str:
    """The summary a summarising response gave: its last assistant message."""
    texts = [i.text for i in items if isinstance(i, Message) and i.role == "assistant"]
    return texts[-1] if texts else ""
