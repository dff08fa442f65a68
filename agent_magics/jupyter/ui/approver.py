"""Approvers for the front ends: the widget one (a person clicks) and the headless one.

The widget approver parks each question in a future created on the kernel's loop. A
click resolves it through ``loop.call_soon_threadsafe``: with comms over kernel
subshells (ipykernel 7 under JupyterLab >= 4.4) button handlers may run on another
thread, and a plain ``set_result`` from there would not wake the loop.
"""

from __future__ import annotations

import asyncio
from typing import Literal

from agent_magics.protocol.approval import ApprovalRequest, Approver, ReviewDecision

HeadlessMode = Literal["deny", "approve"]

HEADLESS_NOTES: dict[str, str] = {
    "deny": (
        "Denied: nobody can approve in a headless run, so every call that needs approval "
        "is denied; to let such calls run, set AGENT_MAGICS_HEADLESS_APPROVAL=approve (or "
        "`%config AgentMagics.headless_approval = 'approve'`) before the run, or give the "
        "cell `-a never` (commands then run without asking, inside the sandbox of `-s`)."
    ),
    "approve": "Approved by the headless policy (AgentMagics.headless_approval = 'approve').",
}


class WidgetApprover:
    """An :data:`~agent_magics.protocol.approval.Approver` answered by button clicks.

    Each question waits under its ticket (``ApprovalRequest.ticket``, made when it is
    asked), never under its call id: the model picks call ids, and a parent that names a
    call after its helper's must not be able to have the helper's card answer for it.
    ``decide`` may be called from any thread; the decision lands on ``loop``. Decisions
    for questions that are not (or no longer) waiting are ignored, so a second click on
    a card is harmless.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._waiting: dict[str, tuple[ApprovalRequest, asyncio.Future[ReviewDecision]]] = {}

    @property
    def waiting(self) -> list[ApprovalRequest]:
        """The questions that wait for a person, oldest first."""
        return [request for request, _ in self._waiting.values()]

    async def __call__(self, request: ApprovalRequest) -> ReviewDecision:
        if not request.ticket or request.ticket in self._waiting:
            raise ValueError("an approval question needs a ticket of its own")
        fut: asyncio.Future[ReviewDecision] = self.loop.create_future()
        self._waiting[request.ticket] = (request, fut)
        try:
            return await fut
        finally:
            self._waiting.pop(request.ticket, None)

    def decide(self, ticket: str, decision: ReviewDecision) -> None:
        """Answer the question of ``ticket`` (thread-safe)."""
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self._resolve, ticket, decision)

    def _resolve(self, ticket: str, decision: ReviewDecision) -> None:
        _, fut = self._waiting.get(ticket, (None, None))
        if fut is not None and not fut.done():
            fut.set_result(decision)

    def cancel_all(self) -> None:
        """Drop every open question (the turn is being stopped)."""
        for _, fut in list(self._waiting.values()):
            if not fut.done():
                fut.cancel()
        self._waiting.clear()


def headless_approver(mode: HeadlessMode) -> Approver:
    """What a headless run answers when a call needs a person."""
    decision = ReviewDecision.APPROVED if mode == "approve" else ReviewDecision.DENIED

    async def answer(request: ApprovalRequest) -> ReviewDecision:
        return decision

    return answer
