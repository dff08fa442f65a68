"""``%agent undo``: put back the files the last turn changed, once the person confirms.

In a notebook the cell asks with two buttons (Undo / Cancel); where nobody can click (a
terminal IPython, a headless run) it says what would be restored and how to confirm
(``%agent undo --yes``). The check against what the turn left runs again at the click,
since the files may change while the question waits.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import ipywidgets as W
from IPython.display import display

from agent_magics.store.undo import UndoPlan, plan_undo, undo_last_turn
from agent_magics.ui.render import esc

if TYPE_CHECKING:
    from agent_magics.store.changes import TurnChanges
    from agent_magics.ui.controller import Controller

USAGE = "usage: %agent undo [--yes]"
NOTHING = "agent: nothing to undo: no turn of this session changed files since the last undo."
BUSY = "agent: a turn is running; undo once it has ended."
CONFIRM = "agent: {summary} To do it: %agent undo --yes"
CANCELLED = "Undo cancelled: the files stay as the turn left them."


def undo_command(
    controller: Controller, rest: str, loop: asyncio.AbstractEventLoop | None, ask: bool
) -> UndoQuestion | None:
    """Run ``%agent undo [--yes]``. ``ask``: a person can click (a notebook with a
    running loop, not headless); then the question widget is shown and returned."""
    words = rest.split()
    if words not in ([], ["--yes"]):
        print(USAGE)
        return None
    plan = _plan(controller)
    if isinstance(plan, str):
        print(plan)
        return None
    if words == ["--yes"]:
        print("agent: " + _undo(controller, plan))
        return None
    if loop is None or not ask:
        print(CONFIRM.format(summary=plan.summary()))
        return None
    question = UndoQuestion(controller, plan.turn, plan.summary(), loop)
    display(question.root)
    return question


def _plan(controller: Controller, turn: TurnChanges | None = None) -> UndoPlan | str:
    """What an undo would do now, or the sentence that says why it cannot."""
    session = controller.session
    last = session.changes.last if session is not None else None
    if last is None or (turn is not None and last is not turn):
        return NOTHING
    if controller.busy:
        return BUSY
    plan = plan_undo(last)
    return f"agent: {plan.refusal}" if plan.refusal else plan


def _undo(controller: Controller, plan: UndoPlan) -> str:
    session = controller.session
    assert session is not None
    text = undo_last_turn(session.changes, plan)
    recorder = controller.files.recorder
    if recorder is not None:
        recorder.write({"type": "undo", "files": [c.shown for c in plan.restore]})
    return text


class QuestionBox(W.VBox):  # type: ignore[misc]
    """The question's widgets; without widget state (a saved notebook) its sentence."""

    plain = ""

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        data = super()._repr_mimebundle_(**kwargs)
        if isinstance(data, dict):
            data["text/plain"] = self.plain
        return data


class UndoQuestion:
    """The confirmation in the cell. Clicks may arrive on another thread; the undo runs
    on the kernel's loop (as approvals do), never beside a turn."""

    def __init__(
        self,
        controller: Controller,
        turn: TurnChanges,
        summary: str,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        self.controller = controller
        self.turn = turn
        self.loop = loop
        self.text = W.HTML(f"<div>{esc(summary)}</div>")
        self.undo_button = W.Button(description="Undo", button_style="danger")
        self.cancel_button = W.Button(description="Cancel")
        self.undo_button.on_click(lambda _b: self.click(True))
        self.cancel_button.on_click(lambda _b: self.click(False))
        self.root = QuestionBox([self.text, W.HBox([self.undo_button, self.cancel_button])])
        self.root.plain = summary

    def click(self, undo: bool) -> None:
        """Answer the question (thread-safe)."""
        if not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self._answer, undo)

    def _answer(self, undo: bool) -> None:
        if self.undo_button.disabled:
            return  # answered already
        self.undo_button.disabled = self.cancel_button.disabled = True
        if not undo:
            self._say(CANCELLED)
            return
        plan = _plan(self.controller, self.turn)
        self._say(
            plan.removeprefix("agent: ") if isinstance(plan, str) else _undo(self.controller, plan)
        )

    def _say(self, text: str) -> None:
        self.text.value = f"<div>{esc(text)}</div>"
