"""Codex's command heuristics: the shared vectors, then our own tables.

The vectors come from Codex's unit tests (conformance/vectors/safe_command_cases.json).
The extra tables pin down the accept/reject decisions and the words of Codex's "word
only" check on tree-sitter-bash, as Codex has them, and the words bash passes instead
(tests/tools/command_safety/test_shell_differential.py checks those against real bash
and names where
they differ). Also the here-document prefix, dangerous commands and approval-key argv.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from agent_magics.tools.command_safety.parse import bash_script_words
from agent_magics.tools.command_safety.rules import (
    canonical_command,
    commands_of,
    exec_policy_commands,
    is_dangerous_command,
    is_known_safe_command,
    parse_heredoc_command,
    parse_shell_script,
)
from tests.helpers.paths import CONFORMANCE

VECTORS = CONFORMANCE / "vectors" / "safe_command_cases.json"
LINUX = sys.platform.startswith("linux")


def _vectors(key: str) -> list[Any]:
    cases = json.loads(VECTORS.read_text())[key]
    return [pytest.param(case, id=f"{i:02d}-{_name(case)}") for i, case in enumerate(cases)]


def _name(case: dict[str, Any]) -> str:
    text = " ".join(case["argv"]) if "argv" in case else case["script"]
    return text.replace("\n", "\\n")[:60]


@pytest.mark.parametrize("case", _vectors("is_known_safe_command_cases"))
def test_known_safe_vectors(case: dict[str, Any]) -> None:
    expected = case["is_known_safe"]
    platform = case.get("platform", "")
    if platform.startswith("windows only"):
        expected = False  # a Windows path is not a known command anywhere else
    if case["argv"][:2] == ["git", "-C"]:
        expected = False  # `-C` can name a repository the model wrote (see KNOWN_SAFE)
    elif platform.startswith("linux only") and not LINUX:
        expected = not expected
    assert is_known_safe_command(case["argv"]) is expected


@pytest.mark.parametrize("case", _vectors("plain_command_sequence_cases"))
def test_plain_command_vectors(case: dict[str, Any]) -> None:
    assert parse_shell_script(case["script"]) == case["plain_commands"]


@pytest.mark.parametrize("case", _vectors("command_might_be_dangerous_cases"))
def test_dangerous_vectors(case: dict[str, Any]) -> None:
    assert is_dangerous_command(case["argv"]) is case["might_be_dangerous"]


P = pytest.param
PLAIN_SCRIPTS = [
    P("", [], id="empty"),
    P("  \n\t ", [], id="blank"),
    P("ls\npwd", [["ls"], ["pwd"]], id="newline-separates"),
    P("\n\nls\n\n", [["ls"]], id="blank-lines"),
    P("ls;", [["ls"]], id="trailing-semicolon"),
    P("ls ; pwd ;", [["ls"], ["pwd"]], id="semicolons"),
    P("ls &&\n\npwd", [["ls"], ["pwd"]], id="newline-after-and"),
    P("ls |\nwc", [["ls"], ["wc"]], id="newline-after-pipe"),
    P("ls&&pwd||true|wc;ls", [["ls"], ["pwd"], ["true"], ["wc"], ["ls"]], id="no-spaces"),
    P("ls \\\n-la", [["ls", "-la"]], id="line-continuation"),
    # Words as tree-sitter spells them, backslashes kept (bash's: BASH_WORDS below).
    P("l\\\ns", [["l", "s"]], id="continuation-splits-word"),
    P("echo a\\ b", [["echo", "a\\ b"]], id="escaped-space"),
    P("echo \\ a", [["echo", "a"]], id="escaped-space-tree-sitter-separates"),
    P("echo \\$HOME", [["echo", "\\$HOME"]], id="escaped-dollar"),
    P('echo "a\\"b"', [["echo", 'a\\"b']], id="escape-in-double-quotes"),
    P('echo "a\\x\\\\"', [["echo", "a\\x\\\\"]], id="other-escape-in-double-quotes"),
    P("echo 'a\\'", [["echo", "a\\"]], id="single-quotes-literal"),
    P("echo ''", [["echo", ""]], id="empty-single-quotes"),
    P('echo a""', [["echo", "a"]], id="concatenation-with-empty"),
    P("echo ''\"\"", None, id="empty-concatenation"),
    P("echo 'it'\\''s'", [["echo", "it\\'s"]], id="quote-escape-quote"),
    P('echo "a"\\x', [["echo", "a", "\\x"]], id="escape-after-quote-tree-sitter-splits"),
    P("echo src/*.py ~/x a=b", [["echo", "src/*.py", "~/x", "a=b"]], id="globs"),
    P("echo {a,b}", [["echo", "{a,b}"]], id="brace-expansion"),
    P("echo *.py", [["echo", "*.py"]], id="glob"),
    P("echo -*", [["echo", "-*"]], id="glob-with-dash-prefix"),
    P("echo ] ]", [["echo", "] ]"]], id="special-run-tree-sitter-joins"),
    P("echo {1..3}", None, id="brace-expression"),
    P("echo x#y", [["echo", "x#y"]], id="hash-inside-word"),
    P("ls # note", None, id="comment"),
    P("ls;#note", None, id="comment-after-semicolon"),
    P("echo ==x", [["echo", "==x"]], id="double-equals-word"),
    P("echo == x", None, id="test-operator"),
    P("echo -1 08 0x1f", [["echo", "-1", "08", "0x1f"]], id="numbers"),
    P("123 foo", None, id="number-as-command"),
    P('"ls" x', None, id="quoted-command-name"),
    P("l's'", None, id="concatenated-command-name"),
    P("then x; fi; done", [["then", "x"], ["fi"], ["done"]], id="stray-keywords"),
    P("if true; then ls; fi", None, id="if"),
    P("for", None, id="for"),
    P("export FOO", None, id="declaration"),
    P("! ls", None, id="negation"),
    P("[ -f x ]", None, id="test-command"),
    P("{ ls; }", None, id="group"),
    P("a=", None, id="bare-assignment"),
    P("a+=b ls", None, id="append-assignment"),
    P("x#y", None, id="hash-in-command-name"),
    P("a%b", None, id="percent-in-command-name"),
    P("ls|&wc", None, id="pipe-stderr"),
    P("ls ;; pwd", None, id="double-semicolon"),
    P("; ls", None, id="leading-semicolon"),
    P("ls\n&& pwd", None, id="operator-after-newline"),
    P("ls &", None, id="background"),
    P("ls 2>&1", None, id="fd-redirect"),
    P("cat <<EOF\nx\nEOF", None, id="heredoc"),
    P("cat <<< x", None, id="herestring"),
    P("echo $'x'", None, id="ansi-c-string"),
    P('echo $"x"', None, id="translated-string"),
    P("echo a$", None, id="bare-dollar"),
    P('echo "$"', None, id="dollar-in-quotes"),
    P('echo "a`b`"', None, id="backticks-in-quotes"),
    P("echo <(ls)", None, id="process-substitution"),
    P("echo a\\", None, id="trailing-backslash"),
    P("ls \\\n", None, id="continuation-at-end"),
    P("echo 'open", None, id="unterminated-single"),
    P('echo "open', None, id="unterminated-double"),
    P("ls\n\\x", [["ls", "\n\\x"]], id="newline-then-escape-joins-the-command"),
    P("echo a\u00a0b", [["echo", "a\u00a0b"]], id="unicode-space"),
    P("echo 'a\u00a0b\v'", [["echo", "a\u00a0b\v"]], id="unicode-space-quoted"),
]


@pytest.mark.parametrize(("script", "expected"), PLAIN_SCRIPTS)
def test_parse_shell_script(script: str, expected: list[list[str]] | None) -> None:
    assert parse_shell_script(script) == expected


HEREDOCS = [
    P("python3 <<'PY'\nprint('hello')\nPY", ["python3"], id="quoted"),
    P("python3 << PY\nprint('hello')\nPY", ["python3"], id="unquoted"),
    P("python3 - <<'PY'\nimport os\nPY", ["python3"], id="dash-dropped"),
    P("cat a - b <<EOF\nx\nEOF", ["cat", "a", "-", "b"], id="dash-kept-elsewhere"),
    P("rm -rf x <<EOF\nEOF", ["rm", "-rf", "x"], id="arguments"),
    P("FOO=1 python3 <<EOF\nx\nEOF", ["python3"], id="assignment-prefix"),
    P("x=1; cat <<EOF\nx\nEOF", ["cat"], id="assignment-statement"),
    P("# setup\ncat <<EOF\nx\nEOF\n", ["cat"], id="comment-before"),
    P("cat <<EOF > out.txt\nx\nEOF", ["cat"], id="redirect-after"),
    P("cat > out.txt <<EOF\nx\nEOF", ["cat"], id="redirect-before"),
    P("cat 2>/dev/null <<EOF\nx\nEOF", ["cat"], id="fd-redirect"),
    P("cat <<EOF file2\nx\nEOF", ["cat"], id="words-after-heredoc-not-arguments"),
    P("cat <<-EOF\n\tx\n\tEOF", ["cat"], id="dash-heredoc"),
    P("cat <<\\EOF\n$(x)\nEOF", ["cat"], id="escaped-delimiter-literal-body"),
    P("cat <<'EOF'\n$(x)\nEOF", ["cat"], id="quoted-body-literal"),
    P("cat <<EOF\n$HOME ${X} `x`\nEOF", ["cat"], id="expansions-in-body"),
    P("cat <<EOF\nx\nEOF # done", ["cat"], id="comment-after-end"),
    P("cat <<EOF\r\nx\r\nEOF\r\n", ["cat"], id="crlf"),
    P("cat <<EOF\n$(whoami)\nEOF", None, id="command-substitution-in-body"),
    P("cat <<EOF\n\\$(x)\nEOF", None, id="escaped-substitution-in-body"),
    P("cat <<EOF\nx\nEOF\nls", None, id="second-command"),
    P("cat <<EOF | grep x\nx\nEOF", None, id="pipeline"),
    P("cat <<EOF && ls\nx\nEOF", None, id="list"),
    P("cat <<A <<B\na\nA\nb\nB", None, id="two-heredocs"),
    P("cat <<EOF\nno end", None, id="unterminated"),
    P("cat <<EOF\nx\nEOFX\nEOF", None, id="delimiter-prefix-line"),
    P('cat <<E"O"F\nx\nEOF', None, id="partly-quoted-delimiter"),
    P('python3 -c "x" <<EOF\nEOF', None, id="quoted-argument"),
    P("cat {a,b} <<EOF\nx\nEOF", None, id="concatenated-argument"),
    P('"cat" <<EOF\nx\nEOF', None, id="quoted-name"),
    P("if <<EOF\nx\nEOF", None, id="keyword"),
    P("echo hello > /tmp/out.txt", None, id="no-heredoc"),
    P('python3 <<< "$(rm -rf /)"', None, id="herestring-with-substitution"),
    P("python3 $((1<<2)) <<'PY'\nx\nPY", None, id="arithmetic"),
]


@pytest.mark.parametrize(("script", "expected"), HEREDOCS)
def test_parse_heredoc_command(script: str, expected: list[str] | None) -> None:
    assert parse_heredoc_command(script) == expected


KNOWN_SAFE = [
    # Codex skips these global options and calls the command safe (is_safe_command.rs,
    # find_git_subcommand); they point git at a repository whose hooks it runs.
    P(["git", "-C", "repo", "status"], False, id="git-dash-C-codex-allows"),
    P(["git", "--git-dir=.git", "log", "-p"], False, id="git-git-dir-codex-allows"),
    P(["git", "-Crepo", "diff"], False, id="git-attached-C-codex-allows"),
    P(["git", "--work-tree", "w", "status"], False, id="git-work-tree-codex-allows"),
    P(["git", "--bare", "log"], False, id="git-bare"),
    P(["git", "--exec-path=x", "status"], False, id="git-exec-path-codex-allows"),
    P(["git", "-c", "core.hooksPath=h", "status"], False, id="git-hooks-path"),
    P(["git", "--no-pager", "log"], True, id="git-no-pager"),
    P(["git", "--config-env=x=Y", "status"], False, id="git-config-env"),
    P(["git", "diff", "--ext-diff"], False, id="git-ext-diff"),
    P(["git", "log", "--exec=x"], False, id="git-exec"),
    P(["git", "show", "--textconv"], False, id="git-textconv"),
    P(["git", "status", "--paginate"], False, id="git-paginate"),
    P(["git", "branch", "-a", "-v"], True, id="git-branch-listing"),
    P(["git", "branch", "--format=%(refname)"], True, id="git-branch-format"),
    P(["git", "branch", "-D", "x"], False, id="git-branch-delete"),
    P(["git", "--", "status"], True, id="git-double-dash"),
    P(["/usr/bin/git", "status"], True, id="git-by-path"),
    P(["sed", "-n", "10p"], True, id="sed-single-line"),
    P(["sed", "-n", "1,5p", "a", "b"], False, id="sed-too-many-args"),
    P(["sed", "-n", "1,2,3p", "f"], False, id="sed-three-numbers"),
    P(["sed", "-n", ",5p", "f"], False, id="sed-empty-number"),
    P(["sed", "-i", "1p", "f"], False, id="sed-in-place"),
    P(["base64", "-d", "f"], True, id="base64-decode"),
    P(["rg", "-n", "x", "--pre-glob", "*.gz"], True, id="rg-pre-glob-is-fine"),
    P(["/bin/ls", "-la"], True, id="ls-by-path"),
    P(["cargo", "check"], False, id="cargo"),
    P([], False, id="empty-argv"),
    P(["bash", "-lc", ""], False, id="empty-script"),
    P(["bash", "-c", "ls && git status"], True, id="script-of-safe-commands"),
    P(["sh", "-c", "cat x | head -n 3"], True, id="sh"),
    P(["zsh", "-lc", "git log -1"], True, id="zsh-name"),
    P(["bash", "-x", "ls"], False, id="other-flag"),
    P(["fish", "-c", "ls"], False, id="other-shell"),
    P(["bash", "-lc", "ls > out"], False, id="redirect"),
    P(["bash", "-lc", "cat <<EOF\nx\nEOF"], False, id="heredoc-script"),
    P(["bash", "-lc", "ls && bash -lc 'ls'"], False, id="nested-shell-is-not-exec-safe"),
]


@pytest.mark.parametrize(("argv", "expected"), KNOWN_SAFE)
def test_is_known_safe_command(argv: list[str], expected: bool) -> None:
    assert is_known_safe_command(argv) is expected


DANGEROUS = [
    P(["rm", "-rf", "/tmp/x"], True, id="rm-rf"),
    P(["rm", "-f", "x"], True, id="rm-f"),
    P(["sudo", "rm", "-rf", "/"], True, id="sudo"),
    P(["sudo", "sudo", "rm", "-f", "x"], True, id="sudo-sudo"),
    P(["rm", "-r", "x"], False, id="rm-r"),
    P(["rm", "-r", "-f", "x"], False, id="force-not-first"),
    P(["rm", "-fr", "x"], False, id="rm-fr-spelling"),
    P(["rm", "--force", "x"], False, id="long-force"),
    P(["/bin/rm", "-rf", "x"], False, id="rm-by-path"),
    P(["sudo"], False, id="sudo-alone"),
    P([], False, id="empty"),
    P(["bash", "-lc", "ls && rm -rf /tmp/x"], True, id="in-script"),
    P(["/bin/zsh", "-c", "echo x | sudo rm -f y"], True, id="in-pipeline"),
    P(["bash", "-lc", "rm -rf $HOME"], False, id="script-not-plain"),
    P(["bash", "-lc", "echo 'rm -rf /'"], False, id="quoted-text"),
    P(["bash", "-lc", "rm -rf x <<EOF\nEOF"], False, id="heredoc-script"),
]


@pytest.mark.parametrize(("argv", "expected"), DANGEROUS)
def test_is_dangerous_command(argv: list[str], expected: bool) -> None:
    assert is_dangerous_command(argv) is expected


HEREDOC_SCRIPT = "python3 <<'PY'\nprint('hello')\nPY"
CANONICAL = [
    P(["/bin/bash", "-lc", "cargo   test  -p x"], ["cargo", "test", "-p", "x"], id="bash-path"),
    P(["bash", "-c", "cargo test -p x"], ["cargo", "test", "-p", "x"], id="bash-c"),
    P(["zsh", "-lc", "echo 'a b'"], ["echo", "a b"], id="zsh-quoted"),
    P(
        ["/bin/zsh", "-lc", HEREDOC_SCRIPT],
        ["__codex_shell_script__", "-lc", HEREDOC_SCRIPT],
        id="heredoc",
    ),
    P(
        ["bash", "-c", "ls && pwd"],
        ["__codex_shell_script__", "-c", "ls && pwd"],
        id="two-commands",
    ),
    P(["bash", "-lc", ""], ["__codex_shell_script__", "-lc", ""], id="empty-script"),
    P(
        ["powershell.exe", "-NoProfile", "-Command", "Write-Host hi"],
        ["__codex_powershell_script__", "Write-Host hi"],
        id="powershell",
    ),
    P(["pwsh", "-c", "Get-Location"], ["__codex_powershell_script__", "Get-Location"], id="pwsh"),
    P(["pwsh", "-File", "x.ps1"], ["pwsh", "-File", "x.ps1"], id="powershell-other-flag"),
    P(["cargo", "fmt"], ["cargo", "fmt"], id="plain-argv"),
    P(["bash", "-lc", "ls", "x"], ["bash", "-lc", "ls", "x"], id="four-args"),
]


@pytest.mark.parametrize(("argv", "expected"), CANONICAL)
def test_canonical_command(argv: list[str], expected: list[str]) -> None:
    assert canonical_command(argv) == expected


POLICY_COMMANDS = [
    P(["bash", "-lc", "ls && cargo build"], ([["ls"], ["cargo", "build"]], False), id="plain"),
    P(["zsh", "-lc", HEREDOC_SCRIPT], ([["python3"]], True), id="heredoc-complex"),
    P(["bash", "-lc", ""], ([["bash", "-lc", ""]], False), id="empty-falls-back"),
    P(["bash", "-lc", " \n\t "], ([["bash", "-lc", " \n\t "]], False), id="blank-falls-back"),
    P(["bash", "-lc", "ls > x"], ([["bash", "-lc", "ls > x"]], False), id="redirect-falls-back"),
    P(["ls", "-la"], ([["ls", "-la"]], False), id="argv"),
]


@pytest.mark.parametrize(("argv", "expected"), POLICY_COMMANDS)
def test_exec_policy_commands(argv: list[str], expected: tuple[list[list[str]], bool]) -> None:
    assert exec_policy_commands(argv) == expected
    assert commands_of(argv) == expected[0]


def test_two_megabyte_script_is_read_as_codex_reads_it() -> None:
    """No length limit, as in Codex: tree-sitter and the reading of bash's words take
    time linear in the script's length."""
    script = "echo " + "a\\ " * 700_000
    assert len(script) > 2_000_000
    argv = ["bash", "-lc", script]
    word = script.removeprefix("echo ")
    assert exec_policy_commands(argv) == ([["echo", word]], False)
    assert canonical_command(argv) == ["echo", word]
    assert bash_script_words(script) == [["echo", "a " * 700_000]]
    assert is_known_safe_command(argv) is True


BASH_WORDS = [
    P('ls a\\ b \'c d\' "e\\"f"', [["ls", "a b", "c d", 'e"f']], id="escapes-removed"),
    P('ls "a\\x\\$\\`\\\\"', [["ls", "a\\x$`\\"]], id="double-quote-escapes"),
    P("ls a\\\nb", None, id="continuation-tree-sitter-splits-at"),
    P('cat "a\\\nb"', [["cat", "ab"]], id="continuation-inside-quotes"),
    P("ls \\\n-la && ls", [["ls", "-la"], ["ls"]], id="continuation-between-words"),
    P("ls 'it'\\''s' x\\*", [["ls", "it's", "x*"]], id="escaped-quote-and-glob"),
    P("ls src/*.py {} x{", [["ls", "src/*.py", "{}", "x{"]], id="globs-with-a-prefix"),
    P("ls \\*", [["ls", "*"]], id="escaped-glob"),
    P("ls\n\\rm -f x", None, id="tree-sitter-joins-lines"),
    P("ls \\ x", None, id="escaped-blank-tree-sitter-drops"),
    P("ls a\\\tb", None, id="escaped-tab"),
    P("ls a\u00a0b", None, id="unicode-space"),
    P("ls {a,b}", None, id="brace-expansion"),
    P("ls a'{'b}", [["ls", "a{b}"]], id="quoted-brace"),
    P("ls *", None, id="leading-glob"),
    P("ls -*", None, id="glob-in-an-option"),
    P("ls ] ]", None, id="joined-brackets"),
    P("time ls", None, id="reserved-word"),
    P("ls; then", None, id="reserved-word-later"),
    P("l\\\ns", None, id="continuation-splits-for-tree-sitter"),
    P("ls > x", None, id="not-plain"),
]


@pytest.mark.parametrize(("script", "expected"), BASH_WORDS)
def test_bash_script_words(script: str, expected: list[list[str]] | None) -> None:
    assert bash_script_words(script) == expected
