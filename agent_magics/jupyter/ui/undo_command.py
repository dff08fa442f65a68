"""``%agent undo``: put back the files the last turn changed, once the person confirms.

In a notebook the cell asks with buttons: Undo (the agent's own writes), Undo all (also
the files changed while commands ran, whose diffs the question shows: the person may
have saved them meanwhile), Cancel. Where nobody can click (a terminal IPython, a
headless run) it says what would be restored, shows those diffs and how to confirm
(``%agent undo --yes``, ``--yes --all``). The check against what the turn left runs again
at the click, since the files may change while the question waits.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import ipywidgets as W
from IPython.display import display

from agent_magics.errors import for_person
from agent_magics.jupyter.ui.buttons import card_button
from agent_magics.jupyter.ui.cards import close_widgets
from agent_magics.store.undo import UndoPlan, plan_undo, undo_last_turn, undo_record, undo_turn
from agent_magics.transcript.html import esc

if TYPE_CHECKING:
    from agent_magics.jupyter.ui.controller import Controller
    from agent_magics.store.changes import TurnChanges

USAGE = "usage: %agent undo [--yes [--all]]"
NOTHING = "nothing to undo: no turn of this session changed files since the last undo."
BUSY = "a turn is running; undo once it has ended."
CONFIRM = "{summary} To do it: %agent undo --yes"
CONFIRM_ALL = " (the agent's own writes); with the files above too: %agent undo --yes --all"
CANCELLED = "Undo cancelled: the files stay as the turn left them."


def undo_command(
    controller: Controller, rest: str, loop: asyncio.AbstractEventLoop | None, ask: bool
) -> UndoQuestion | None:
    """Run ``%agent undo [--yes [--all]]``. ``ask``: a person can click (a notebook with
    a running loop, not headless); then the question widget is shown and returned."""
    words = rest.split()
    if words not in ([], ["--yes"], ["--yes", "--all"]):
        print(USAGE)
        return None
    plan = _plan(controller)
    if isinstance(plan, str):
        print(for_person(plan))
        return None
    if words and plan.turn.cells:
        _undo_later(controller, plan, everything="--all" in words, loop=loop)
        return None
    if words:
        print(for_person(_undo(controller, plan, everything="--all" in words)))
        _print_diffs([c.since for c, _ in plan.left if c.since])
        return None
    if loop is None or not ask:
        print(
            for_person(CONFIRM.format(summary=plan.summary())) + (CONFIRM_ALL if plan.asked else "")
        )
        _print_diffs(plan.diffs())
        return None
    question = UndoQuestion(controller, plan, loop)
    display(question.root)
    return question


def _print_diffs(diffs: list[str]) -> None:
    for diff in diffs:
        print("\n" + diff.rstrip("\n"))


def _plan(controller: Controller, turn: TurnChanges | None = None) -> UndoPlan | str:
    """What an undo would do now, or the sentence that says why it cannot (for
    :func:`.errors.for_person`)."""
    session = controller.session
    last = session.changes.last if session is not None else None
    if last is None or (turn is not None and last is not turn):
        return NOTHING
    if controller.busy:
        return BUSY
    plan = plan_undo(last)
    return plan.refusal or plan


def _undo(controller: Controller, plan: UndoPlan, *, everything: bool) -> str:
    session = controller.session
    assert session is not None
    text = undo_last_turn(session.changes, plan, everything=everything)
    recorder = controller.files.recorder
    if recorder is not None:
        recorder.write(undo_record(plan, everything=everything, cells=[]))
    return text


async def _undo_with_cells(controller: Controller, plan: UndoPlan, *, everything: bool) -> str:
    """Undo a turn that edited the open notebook (:func:`undo_turn`)."""
    session = controller.session
    assert session is not None
    recorder = controller.files.recorder
    record = recorder.write if recorder is not None else None
    return await undo_turn(session.changes, plan, everything=everything, record=record)


def _undo_later(
    controller: Controller,
    plan: UndoPlan,
    *,
    everything: bool,
    loop: asyncio.AbstractEventLoop | None,
) -> None:
    """``--yes`` for a turn that edited the open notebook: the undo awaits its document,
    so on the kernel's loop it runs as a task whose outcome replaces a line in the cell."""
    work = _undo_with_cells(controller, plan, everything=everything)
    if loop is None:
        print(for_person(controller.own_loop().run_until_complete(work)))
        return
    from agent_magics.jupyter.ui.controller import TextDisplay

    handle = display(TextDisplay(for_person("undoing…")), display_id=True)

    def finished(task: asyncio.Task[str]) -> None:
        if task.cancelled():
            text = for_person("undo was stopped.")
        elif task.exception() is not None:
            text = for_person(f"undo failed: {task.exception()}")
        else:
            text = for_person(task.result())
        if handle is not None:
            handle.update(TextDisplay(text))

    task = loop.create_task(work)
    _RUNNING.add(task)
    task.add_done_callback(_RUNNING.discard)
    task.add_done_callback(finished)


_RUNNING: set[asyncio.Task[str]] = set()  # undo tasks, kept until done


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
        self, controller: Controller, plan: UndoPlan, loop: asyncio.AbstractEventLoop
    ) -> None:
        self.controller = controller
        self.turn = plan.turn
        self.loop = loop
        diffs = "".join(f"<pre>{esc(d)}</pre>" for d in plan.diffs())
        self.text = W.HTML(f"<div>{esc(plan.summary())}</div>{diffs}")
        self.buttons: list[W.Button] = []
        if plan.restore or plan.turn.cells:
            self._button("Undo", "danger", "some")
        if plan.asked:
            self._button("Undo all", "danger", "all")
        self._button("Cancel", "", "none")
        self.root = QuestionBox([self.text, W.HBox(self.buttons)])
        self.root.plain = plan.summary()

    def _button(self, label: str, style: str, answer: str) -> None:
        button = card_button(label, style)
        button.on_click(lambda _b: self.click(answer))
        self.buttons.append(button)

    def click(self, answer: str) -> None:
        """Answer the question (thread-safe): ``some`` (the agent's own writes), ``all``
        (with the files changed while commands ran) or ``none``."""
        if not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self._answer, answer)

    def _answer(self, answer: str) -> None:
        if self.buttons[0].disabled or self.root.children == (self.text,):
            return  # answered already
        for button in self.buttons:
            button.disabled = True
        row = self.root.children[1:]
        self.root.children = (self.text,)  # the decision takes the buttons' place
        close_widgets(*row)
        if answer == "none":
            self._say(CANCELLED)
            return
        plan = _plan(self.controller, self.turn)
        if isinstance(plan, str):
            self._say(plan)
            return
        if not plan.turn.cells:
            self._say(_undo(self.controller, plan, everything=answer == "all"))
            return
        self._say("Undoing…")
        task = self.loop.create_task(
            _undo_with_cells(self.controller, plan, everything=answer == "all")
        )
        _RUNNING.add(task)
        task.add_done_callback(_RUNNING.discard)
        task.add_done_callback(self._said)

    def _said(self, task: asyncio.Task[str]) -> None:
        if task.cancelled():
            self._say("Undo was stopped.")
        elif task.exception() is not None:
            self._say(f"Undo failed: {task.exception()}")
        else:
            self._say(task.result())

    def _say(self, text: str) -> None:
        self.text.value = f"<div>{esc(text)}</div>"
