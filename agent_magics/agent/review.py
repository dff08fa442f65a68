"""Review mode: one turn of a separate reviewer session that reads the changes and
answers with prioritised findings.

What carries over from Codex (so tools that read its reviews read ours): the targets
(uncommitted changes, a base branch through its merge base, a commit, free
instructions), the findings' JSON shape (``findings`` with ``title``, ``body``,
``confidence_score``, ``priority`` 0-3, ``code_location`` with ``absolute_file_path`` and
an inclusive ``line_range``; ``overall_correctness``, ``overall_explanation``,
``overall_confidence_score``), how a reply is read (the whole text as JSON, else the
outermost ``{...}`` in it, else the text as the explanation) and how findings are laid
out as text. The reviewer's instructions and prompts are our own.

The reviewer only reads: commands run in the read-only sandbox without asking (nobody
needs to approve what cannot write), and it gets no patch, notebook, kernel, MCP, web
search or helper tools. Its conversation is its own; the session that asked gets the
findings as a note for its next turn.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from agent_magics.agent.redaction import SecretSource, no_secrets
from agent_magics.errors import UserError
from agent_magics.protocol.approval import ApprovalPolicy, SandboxMode

if TYPE_CHECKING:
    from agent_magics.agent.session import Session
    from agent_magics.config import SessionConfig
    from agent_magics.tools.handlers.toolset import ToolFilter

READ_ONLY_TOOLS = frozenset(
    {
        "exec_command",
        "write_stdin",
        "shell",
        "shell_command",
        "local_shell",
        "read_file",
        "list_dir",
        "grep_files",
        "update_plan",
    }
)
"""What the reviewer may call: commands (in the read-only sandbox) and the file tools."""
NO_OUTPUT = "The reviewer gave no answer."
INTERRUPTED = "The review was stopped before it finished; run it again to get its findings."

REVIEW_INSTRUCTIONS = """\
You review a code change someone else made. Read the change and the code around it with \
the tools you have (commands such as `git diff`, `git show` and `git log` run in a \
read-only sandbox; you cannot and must not change any file), then report what the author \
should fix.

What counts as a finding:
- It is a real defect the change introduced: wrong results, a crash, a security hole, \
lost data, a clear performance or maintainability problem. Problems that were there \
before the change are not findings.
- It is specific and actionable: one problem, in one place, with a fix the author can \
see. A vague worry, or a guess that some other code might break, is not a finding unless \
you found the code that breaks.
- The author would want to know and would fix it. Style, naming, formatting and typos \
are not findings unless they hide a bug or break a rule the project writes down.
- It is not what the author plainly meant to do.
Report every finding that qualifies, not only the first. When none does, report none.

How to write one:
- The title starts with its priority and says what to do, at most 80 characters: \
"[P0]" blocks a release or breaks for everyone, "[P1]" should be fixed next, "[P2]" in \
due course, "[P3]" is minor. Give the same number in `priority` (0 to 3).
- The body is one short paragraph of Markdown: why it is wrong, under which inputs or \
conditions it shows, how severe that makes it. Code in it is inline or a block of at \
most three lines; a ```suggestion block holds replacement lines only, with their \
indentation kept exactly.
- The location is the smallest range of lines (at most about ten) in a file the change \
touched that shows the problem, with the file's absolute path.
- Where the project's own instructions (AGENTS.md files) support a finding, cite the \
file and lines in the body.
- Say how sure you are of each finding in `confidence_score`, from 0.0 to 1.0.

Then judge the change as a whole: "patch is correct" when existing code and tests keep \
working and nothing blocking is wrong (minor issues do not make it incorrect), else \
"patch is incorrect", with one to three sentences why and how sure you are.

Your last message is only this JSON object, with no fence and no other text:
{
  "findings": [
    {
      "title": "<[P0]-[P3] and what to fix, at most 80 characters>",
      "body": "<one paragraph of Markdown: why, when, how severe>",
      "confidence_score": <0.0-1.0>,
      "priority": <0-3>,
      "code_location": {
        "absolute_file_path": "<absolute path of the file>",
        "line_range": {"start": <first line>, "end": <last line>}
      }
    }
  ],
  "overall_correctness": "patch is correct" or "patch is incorrect",
  "overall_explanation": "<one to three sentences>",
  "overall_confidence_score": <0.0-1.0>
}
"""

UNCOMMITTED_PROMPT = (
    "Review the changes in this working tree that are not committed yet (staged, "
    "unstaged and untracked files) and report prioritised findings."
)


@dataclass(frozen=True)
class ReviewTarget:
    """What to review: ``uncommitted`` changes, the changes against a ``base`` branch,
    one ``commit`` (``value`` its sha, ``title`` its subject when known), or ``custom``
    instructions (``value``)."""

    kind: Literal["uncommitted", "base", "commit", "custom"]
    value: str = ""
    title: str | None = None

    def hint(self) -> str:
        """A few words for people: what is being reviewed."""
        if self.kind == "uncommitted":
            return "uncommitted changes"
        if self.kind == "base":
            return f"changes against {self.value}"
        if self.kind == "commit":
            short = self.value[:7]
            return f"commit {short}: {self.title}" if self.title else f"commit {short}"
        return self.value.strip()


def review_prompt(target: ReviewTarget, cwd: Path) -> str:
    """The reviewer's prompt. For a base branch it names the merge base when git finds
    one (the branch's upstream when that is ahead, as Codex takes it), else asks the
    reviewer to find it."""
    if target.kind == "uncommitted":
        return UNCOMMITTED_PROMPT
    if target.kind == "base":
        branch = target.value
        base = merge_base(cwd, branch)
        if base is None:
            return (
                f"Review the changes of this branch against the base branch {branch!r}: find "
                f'their merge base (`git merge-base HEAD "$(git rev-parse --abbrev-ref '
                f'"{branch}@{{upstream}}")"`, or with {branch} itself when it has no '
                "upstream), read `git diff` against it, and report prioritised findings."
            )
        return (
            f"Review the changes of this branch against the base branch {branch!r}. Their "
            f"merge base is {base}: `git diff {base}` shows what would be merged. Report "
            "prioritised findings."
        )
    if target.kind == "commit":
        title = f' ("{target.title}")' if target.title else ""
        return (
            f"Review the changes that commit {target.value}{title} made "
            f"(`git show {target.value}`) and report prioritised findings."
        )
    text = target.value.strip()
    if not text:
        raise UserError("The review's instructions are empty.")
    return text


def _git(cwd: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=30, check=False,
            stdin=subprocess.DEVNULL,  # under agent-magics acp, stdin is the protocol
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else None


def merge_base(cwd: Path, branch: str) -> str | None:
    """The merge base of HEAD and ``branch`` (its upstream instead when that has commits
    the branch lacks); None when git cannot say."""
    if _git(cwd, "rev-parse", "--verify", "--quiet", f"{branch}^{{commit}}") is None:
        return None
    chosen = branch
    upstream = _git(cwd, "rev-parse", "--abbrev-ref", "--symbolic-full-name", f"{branch}@{{u}}")
    if upstream is not None:
        ahead = _git(cwd, "rev-list", "--count", f"{branch}..{upstream}")
        if ahead is not None and ahead != "0":
            chosen = upstream
    return _git(cwd, "merge-base", "HEAD", chosen)


def check_target(target: ReviewTarget, cwd: Path) -> None:
    """Refuse, in one sentence, a review git cannot do here: not a repository, an
    unknown branch or commit."""
    if target.kind == "custom":
        return
    if _git(cwd, "rev-parse", "--show-toplevel") is None:
        raise UserError(f"{cwd} is not in a git repository, so there are no changes to review.")
    if target.kind in ("base", "commit"):
        what = "branch" if target.kind == "base" else "commit"
        if _git(cwd, "rev-parse", "--verify", "--quiet", f"{target.value}^{{commit}}") is None:
            raise UserError(f"git knows no {what} {target.value!r} in {cwd}.")


def commit_title(cwd: Path, sha: str) -> str | None:
    """A commit's subject line, for the prompt and the hint."""
    return _git(cwd, "log", "-1", "--format=%s", sha)


def review_config(config: SessionConfig) -> SessionConfig:
    """The reviewer's settings: the same model and server, our reviewer's instructions,
    commands in the read-only sandbox without asking, the read-only file tools the
    session had, no patch tool, no MCP servers, no web search. A teacher's sandbox limit
    stays."""
    tools = config.experimental_supported_tools
    return config.model_copy(
        update={
            "instructions": REVIEW_INSTRUCTIONS,
            "approval_policy": ApprovalPolicy.NEVER,
            "sandbox_mode": SandboxMode.READ_ONLY,
            "apply_patch_tool_type": None,
            "experimental_supported_tools": tuple(t for t in tools if t in READ_ONLY_TOOLS),
            "mcp_servers": {},
            "web_search": "disabled",
        }
    )


def reviewer(
    config: SessionConfig, offers: ToolFilter | None = None, secrets: SecretSource = no_secrets
) -> Session:
    """A new session that reviews: :func:`review_config`'s settings, and only the
    read-only tools (of those ``offers``, a teacher's policy, lets through), keeping out
    the secrets the front end knows of (``secrets``). Nobody is asked anything: under
    ``never`` no call waits for approval."""
    from agent_magics.agent.session import Session

    def offered(name: str) -> bool:
        return name in READ_ONLY_TOOLS and (offers is None or offers(name))

    return Session(review_config(config), offers=offered, secrets=secrets)


async def run_review(session: Session, target: ReviewTarget) -> tuple[ReviewOutput, str]:
    """One review turn in ``session`` (from :func:`reviewer`): the review, and the text
    its last message becomes (:func:`review_text`)."""
    check_target(target, session.config.cwd)
    if target.kind == "commit" and target.title is None:
        target = ReviewTarget(
            "commit", target.value, commit_title(session.config.cwd, target.value)
        )
    result = await session.run_turn(review_prompt(target, session.config.cwd))
    output = parse_review(result.final_text)
    return output, review_text(output)


class _Shape(BaseModel):
    model_config = ConfigDict(extra="allow")


class LineRange(_Shape):
    start: int
    end: int


class CodeLocation(_Shape):
    absolute_file_path: str
    line_range: LineRange


class ReviewFinding(_Shape):
    title: str
    body: str = ""
    confidence_score: float = 0.0
    priority: int | None = None
    code_location: CodeLocation


class ReviewOutput(_Shape):
    """A review's result, in the shape the reviewer is asked for (and Codex's)."""

    findings: list[ReviewFinding] = []
    overall_correctness: str = ""
    overall_explanation: str = ""
    overall_confidence_score: float = 0.0


def parse_review(text: str) -> ReviewOutput:
    """The reviewer's last message as a review: the whole text as JSON, else the
    outermost ``{...}`` in it (a reply wrapped in a fence or a sentence), else the text
    itself as the explanation, with no findings."""
    start, end = text.find("{"), text.rfind("}")
    for candidate in (text, text[start : end + 1] if 0 <= start < end else None):
        if candidate is None:
            continue
        try:
            data = json.loads(candidate)
            if isinstance(data, dict):
                return ReviewOutput.model_validate(data)
        except (ValueError, ValidationError):
            continue
    return ReviewOutput(overall_explanation=text.strip())


def location(finding: ReviewFinding) -> str:
    where = finding.code_location
    return f"{where.absolute_file_path}:{where.line_range.start}-{where.line_range.end}"


def findings_block(findings: list[ReviewFinding]) -> str:
    """The findings as text, laid out as Codex lays them out: a heading, then for each a
    ``- title — path:start-end`` line and its body indented by two spaces."""
    lines = ["Full review comments:" if len(findings) > 1 else "Review comment:"]
    for finding in findings:
        lines += ["", f"- {finding.title} — {location(finding)}"]
        lines += [f"  {line}" for line in finding.body.splitlines()]
    return "\n".join(lines)


def review_text(output: ReviewOutput) -> str:
    """The review for people and for the last message: the explanation, then the
    findings; :data:`NO_OUTPUT` when it has neither."""
    parts = [output.overall_explanation.strip()] if output.overall_explanation.strip() else []
    if output.findings:
        parts.append(findings_block(output.findings))
    return "\n\n".join(parts) or NO_OUTPUT


def review_note(target: ReviewTarget, output: ReviewOutput | None) -> str:
    """What the asking session's model is told before its next turn: that the person
    ran a review and what it found (or that it was stopped)."""
    if output is None:
        return (
            f"<review>\nThe person started a review of {target.hint()}; it was stopped "
            "before it finished.\n</review>"
        )
    return (
        f"<review>\nThe person ran a review of {target.hint()} in a separate reviewer "
        "session. They may ask you to act on some of its findings.\n"
        f"{review_text(output)}\n</review>"
    )
