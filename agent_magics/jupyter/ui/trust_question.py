"""The question in the cell: trust this project's config, or not now.

Shown above the transcript when the working folder has a project config the user has
not trusted (or that changed since). The turn waits for the answer without blocking the
kernel: like approvals, a click resolves a future on the kernel's loop through
``loop.call_soon_threadsafe`` (click handlers may run on another thread).
"""

from __future__ import annotations

import asyncio
import html
import sys
from collections.abc import Callable
from pathlib import Path

import ipywidgets as W
from IPython.display import display

from agent_magics.config import SessionConfig
from agent_magics.errors import UserError, for_person
from agent_magics.jupyter.ui.buttons import card_button
from agent_magics.jupyter.ui.cards import CARD_LAYOUT
from agent_magics.jupyter.ui.controller import ConfigSource
from agent_magics.trust import ProjectConfig, project_config, trust_project, user_config_file

TRUST, NOT_NOW = "Trust", "Not now"
BUTTONS: tuple[tuple[str, bool, str], ...] = ((TRUST, True, "warning"), (NOT_NOW, False, ""))


def question_html(project: ProjectConfig, user_file: str) -> str:
    """What the project config would set, and where the answer is kept (escaped)."""
    lines = "\n".join(project.lines()) or "(nothing)"
    return (
        f"<div><b>The project config <code>{html.escape(str(project.file))}</code> is "
        f"{project.state()}.</b> It would set:</div>"
        f"<pre style='margin:2px 0'>{html.escape(lines)}</pre>"
        f"<div><b>Trust</b> keeps your answer in <code>{html.escape(user_file)}</code> (a "
        "changed file is asked about again); <b>Not now</b> ignores it for this session. "
        "The turn starts when you answer.</div>"
    )


class TrustQuestion:
    """Two buttons; ``on_answer(trusted)`` runs once, on the loop, and returns the line
    that replaces the buttons."""

    def __init__(
        self,
        project: ProjectConfig,
        user_file: str,
        loop: asyncio.AbstractEventLoop,
        on_answer: Callable[[bool], str],
    ) -> None:
        self.project = project
        self.loop = loop
        self._on_answer = on_answer
        self._answer: asyncio.Future[bool] = loop.create_future()
        self.text = W.HTML(question_html(project, user_file))
        self.buttons: dict[str, W.Button] = {}
        for label, trusted, style in BUTTONS:
            button = card_button(label, style)
            button.on_click(lambda _b, t=trusted: self.decide(t))
            self.buttons[label] = button
        self.button_row = W.HBox(list(self.buttons.values()))
        self.outcome = W.HTML()
        self.root = W.VBox(
            [self.text, self.button_row, self.outcome], layout=W.Layout(**CARD_LAYOUT)
        )

    @property
    def answered(self) -> bool:
        return self._answer.done()

    def decide(self, trusted: bool) -> None:
        """Answer (thread-safe); a second click is ignored."""
        if not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self._resolve, trusted)

    def _resolve(self, trusted: bool) -> None:
        if self._answer.done():
            return
        self._answer.set_result(trusted)
        self.button_row.layout.display = "none"
        self.outcome.value = f"<div>{html.escape(self._on_answer(trusted))}</div>"

    async def answer(self) -> bool:
        """Wait for the click (a stopped turn leaves the question open for the next)."""
        return await asyncio.shield(self._answer)


HEADLESS_HOW = "run `%agent trust` in this folder, or `agent-magics trust FOLDER` in a terminal."


class ProjectTrust:
    """The project-config questions of one ``AgentMagics``: asked once per file content,
    "Not now" remembered for the session."""

    def __init__(self) -> None:
        self.not_now: set[tuple[Path, str]] = set()
        self.questions: dict[tuple[Path, str], TrustQuestion] = {}
        self.last: TrustQuestion | None = None
        """The question shown most recently."""

    def pending(self, folder: Path) -> ProjectConfig | None:
        """The folder's project config if it is untrusted and not put off for now."""
        project = project_config(folder)
        if project is None or project.trusted or (project.folder, project.digest) in self.not_now:
            return None
        return project

    def answer(self, project: ProjectConfig, trusted: bool) -> str:
        """Record the answer; the line that says what happened."""
        if not trusted:
            self.not_now.add((project.folder, project.digest))
            return f"Not now: {project.file} is ignored for this session."
        try:
            kept = trust_project(project)
        except UserError as exc:
            return f"Not trusted: {exc}"
        return f"Trusted: {project.file} applies (kept in {kept})."

    def settle_in_cell(
        self,
        project: ProjectConfig | None,
        headless: bool,
        loop: asyncio.AbstractEventLoop,
        config: SessionConfig,
        build: Callable[[], SessionConfig],
    ) -> tuple[ConfigSource, str | None]:
        """The turn's settings (waiting for the question's answer when there is one) and
        the note for a headless transcript."""
        if project is None:
            return config, None
        if headless or project.problem is not None:
            return config, project.ignored_line(HEADLESS_HOW)
        key = (project.folder, project.digest)
        question = self.questions.get(key)
        if question is None or question.loop is not loop:
            question = TrustQuestion(
                project, str(user_config_file()), loop, lambda t: self.answer(project, t)
            )
            self.questions[key] = question
            display(question.root)
        self.last = question

        async def settings() -> SessionConfig:
            await question.answer()
            self.questions.pop(key, None)
            return build()

        return settings, None

    def settle_in_terminal(
        self, project: ProjectConfig, headless: bool, build: Callable[[], SessionConfig]
    ) -> SessionConfig:
        """Terminal IPython: ask on stdin, record the answer, the settings that follow."""
        if headless or project.problem is not None:
            print(for_person(project.ignored_line(HEADLESS_HOW)), file=sys.stderr)
            return build()
        try:
            reply = input(project.question(user_config_file())).strip().lower()[:1]
        except (EOFError, OSError):
            reply = "n"
        print(for_person(self.answer(project, reply == "y")))
        return build()

    def trust_here(self, folder: Path) -> str:
        """``%agent trust``: trust the folder's project config as it is now."""
        project = project_config(folder)
        if project is None:
            return for_person(f"{Path(folder).resolve()} has no project config.")
        if project.trusted:
            return for_person(f"{project.file} is already trusted.")
        settings = "\n".join(f"  {line}" for line in project.lines())
        return f"{settings}\n{for_person(self.answer(project, True))}"
