"""The texts the model reads for command results, byte for byte as Codex writes them.

* unified exec: ``Chunk ID`` / ``Wall time`` (4 decimals) / exit or session line /
  ``Original token count`` / ``Output:`` and the output cut to the call's token budget
  (or the turn's, when smaller), with the 1 MiB collection cap's omission marker;
* one-shot exec: structured JSON (``shell``) or plain text (``shell_command``) with the
  duration shown as Rust shows a 1-decimal-rounded ``f32`` (``0``, ``0.1``, ``12.3``);
* :func:`reserialize_shell_output`: the JSON form turned into the plain-text form.
"""

from __future__ import annotations

import json
import math
import secrets
import struct
import unicodedata
from decimal import Decimal
from typing import Any

from agent_magics.tools.args import parse_json
from agent_magics.tools.truncate import (
    TruncationPolicy,
    formatted_truncate_text,
    line_count,
    tokens_for_bytes,
    truncate_text,
    utf8_len,
)
from agent_magics.tools.unified_exec.buffer import Collected, omission_marker

# -- numbers ------------------------------------------------------------------------------


def _f32(x: float) -> float:
    value: float = struct.unpack("f", struct.pack("f", x))[0]
    return value


def rounded_duration(seconds: float) -> float:
    """Codex's ``(secs_f32 * 10).round() / 10`` in ``f32`` arithmetic."""
    tenths = _f32(_f32(seconds) * 10.0)
    rounded = math.floor(abs(tenths) + 0.5) * (1 if tenths >= 0 else -1)
    return _f32(rounded / 10.0)


def _shortest_f32(value: float) -> str:
    for digits in range(1, 10):
        text = f"{value:.{digits}g}"
        if _f32(float(text)) == value:
            return text
    return repr(value)


def rust_f32_display(value: float) -> str:
    """Rust's ``Display`` of an ``f32``: shortest round-trip digits, no exponent, no ``.0``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    text = format(Decimal(_shortest_f32(_f32(value))), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text == "-0" and value == 0 else text


def json_f32(value: float) -> str:
    """serde_json's rendering of an ``f32`` (always with a fraction: ``0.0``, ``1.5``)."""
    text = rust_f32_display(value)
    return text if "." in text or not text.lstrip("-").isdigit() else f"{text}.0"


# -- Rust Debug ---------------------------------------------------------------------------

_DEBUG_ESCAPES = {"\t": "\\t", "\r": "\\r", "\n": "\\n", "\\": "\\\\", '"': '\\"', "\0": "\\0"}


def rust_debug_str(text: str) -> str:
    """A string as Rust's ``{:?}`` prints it: quoted, with escapes for quotes,
    backslashes and characters that do not print."""
    out = ['"']
    for ch in text:
        if ch in _DEBUG_ESCAPES:
            out.append(_DEBUG_ESCAPES[ch])
        elif unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"):
            out.append(f"\\u{{{ord(ch):x}}}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


# -- unified exec -------------------------------------------------------------------------


def new_chunk_id() -> str:
    return secrets.token_hex(3)


def model_output(text: str, omitted: int, original_tokens: int, policy: TruncationPolicy) -> str:
    """The output as the model reads it, cut to ``policy`` (head and tail kept) under
    Codex's warning header. ``omitted`` bytes were dropped by the 1 MiB collection cap:
    the text then carries Codex's omission marker, restated under the header when the
    cut removed it."""
    size = utf8_len(text)
    fits = size <= policy.byte_budget
    if not omitted:
        if fits:
            return text
        warning = f"Warning: truncated output (original token count: {tokens_for_bytes(size)})\n"
        return warning + formatted_truncate_text(text, policy)
    marker = omission_marker(omitted)
    if fits:
        return text if marker in text else f"{marker}\n{text}"
    cut = truncate_text(text, policy)
    notice = "" if marker in cut else f"{marker}\n"
    return f"Warning: truncated output (original token count: {original_tokens})\n{notice}\n{cut}"


def output_policy(max_output_tokens: int, turn_policy: TruncationPolicy) -> TruncationPolicy:
    """The call's token budget, or the turn's when that one is smaller (Codex's
    ``model_output_policy``)."""
    requested = TruncationPolicy.tokens(max_output_tokens)
    return requested if requested.byte_budget < turn_policy.byte_budget else turn_policy


def unified_response(
    *,
    chunk_id: str,
    wall_time: float,
    exit_code: int | None,
    session_id: int | None,
    output: Collected,
    policy: TruncationPolicy,
) -> str:
    """The answer to exec_command / write_stdin. ``Original token count`` counts the
    bytes the command wrote (dropped and invalid UTF-8 bytes as they were), the text is
    the kept bytes decoded with U+FFFD for what is not UTF-8."""
    text = output.data.decode("utf-8", errors="replace")
    original_tokens = tokens_for_bytes(output.total)
    lines = [f"Chunk ID: {chunk_id}", f"Wall time: {wall_time:.4f} seconds"]
    if exit_code is not None:
        lines.append(f"Process exited with code {exit_code}")
    if session_id is not None:
        lines.append(f"Process running with session ID {session_id}")
    lines.append(f"Original token count: {original_tokens}")
    lines.append("Output:")
    lines.append(model_output(text, output.omitted, original_tokens, policy))
    return "\n".join(lines)


def create_process_failed(message: str) -> str:
    """exec_command's error when the command could not start (or was refused)."""
    inner = f"Rejected({rust_debug_str(message)})"
    return f"exec_command failed: CreateProcess {{ message: {rust_debug_str(inner)} }}"


def sandbox_denied_failure(text: str, exit_code: int) -> str:
    """exec_command's error when the sandbox stopped the command and no retry is allowed."""
    stream = f"StreamOutput {{ text: {rust_debug_str(text)}, truncated_after_lines: None }}"
    empty = 'StreamOutput { text: "", truncated_after_lines: None }'
    output = (
        f"ExecToolCallOutput {{ exit_code: {exit_code}, stdout: {empty}, stderr: {stream}, "
        f"aggregated_output: {stream}, duration: 0ns, timed_out: false }}"
    )
    inner = f"Codex(Sandbox(Denied {{ output: {output}, network_policy_decision: None }}))"
    return f"exec_command failed: CreateProcess {{ message: {rust_debug_str(inner)} }}"


def intercepted_response(wall_time: float, output: str) -> str:
    """exec_command's answer when the command was an apply_patch run in-process."""
    return f"Wall time: {wall_time:.4f} seconds\nOutput:\n{output}"


# -- one-shot exec ------------------------------------------------------------------------


def structured_output(
    content: str, exit_code: int, duration_s: float, policy: TruncationPolicy
) -> str:
    """``{"output":…,"metadata":{"exit_code":…,"duration_seconds":…}}`` (compact)."""
    output = json.dumps(formatted_truncate_text(content, policy), ensure_ascii=False)
    seconds = json_f32(rounded_duration(duration_s))
    return (
        f'{{"output":{output},"metadata":{{"exit_code":{exit_code},"duration_seconds":{seconds}}}}}'
    )


def freeform_output(
    content: str, exit_code: int, duration_s: float, policy: TruncationPolicy
) -> str:
    shown = truncate_text(content, policy)
    lines = [
        f"Exit code: {exit_code}",
        f"Wall time: {rust_f32_display(rounded_duration(duration_s))} seconds",
    ]
    total = line_count(content)
    if total != line_count(shown):
        lines.append(f"Total output lines: {total}")
    lines += ["Output:", shown]
    return "\n".join(lines)


def _structured_fields(text: str) -> tuple[str, int, float] | None:
    try:
        data: Any = parse_json(text)
    except ValueError:  # also JSON nested past serde's limit
        return None
    if not isinstance(data, dict) or not isinstance(data.get("output"), str):
        return None
    meta = data.get("metadata")
    if not isinstance(meta, dict):
        return None
    code, seconds = meta.get("exit_code"), meta.get("duration_seconds")
    if isinstance(code, bool) or not isinstance(code, int) or not -(2**31) <= code < 2**31:
        return None
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        return None
    return data["output"], code, float(seconds)


def reserialize_shell_output(text: str) -> str:
    """A structured (JSON) exec output in the plain-text form; other text unchanged.

    Used when the request offers the freeform apply_patch tool. A leading
    ``Total output lines: N`` header (and one blank line after it) moves up into the
    header block."""
    fields = _structured_fields(text)
    if fields is None:
        return text
    output, code, seconds = fields
    lines = [f"Exit code: {code}", f"Wall time: {rust_f32_display(seconds)} seconds"]
    prefix = "Total output lines: "
    if output.startswith(prefix) and "\n" in output:
        count, rest = output[len(prefix) :].split("\n", 1)
        if count.isascii() and count.isdigit() and int(count) < 2**32:
            lines.append(f"Total output lines: {int(count)}")
            output = rest[1:] if rest.startswith("\n") else rest
    lines += ["Output:", output]
    return "\n".join(lines)
