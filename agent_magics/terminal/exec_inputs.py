"""What ``agent-magics exec`` reads before a turn and checks after it, for CI and scripts.

``--output-schema FILE``: the schema is read and checked as a JSON Schema before any
request, so a typo fails at once (exit 1, one sentence) rather than after a paid turn;
after the turn the final answer is parsed as JSON and held to it, and the first thing
that does not match is said in one sentence with its place (jsonschema's best match).
``-i FILE``: each image is read and prepared as ``view_image`` prepares one (the same
sizes and formats), so the model sees a prompt's image as it would see a tool's.
``-o FILE``: the final answer's text, exactly, written after the turn. jsonschema and
Pillow are imported only when a schema or an image is given: a plain run loads neither.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agent_magics.errors import PROGRAM, UserError, for_person


def read_output_schema(path: Path) -> dict[str, Any]:
    """The JSON Schema in ``path``; :class:`UserError` when it cannot be read, is not
    JSON, not an object, or not a valid schema."""
    from jsonschema.exceptions import SchemaError
    from jsonschema.validators import validator_for

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"Cannot read the output schema {path}: {_reason(exc)}.") from None
    try:
        schema = json.loads(text)
    except ValueError as exc:
        raise UserError(f"The output schema {path} is not valid JSON: {exc}.") from None
    if not isinstance(schema, dict):
        raise UserError(
            f"The output schema {path} is not a JSON object, as a model server needs one."
        )
    try:
        validator_for(schema).check_schema(schema)
    except SchemaError as exc:
        where = f" at {exc.json_path}" if exc.absolute_path else ""
        raise UserError(
            f"The output schema {path} is not a valid JSON Schema{where}: {exc.message}."
        ) from None
    return schema


def schema_mismatch(answer: str, schema: dict[str, Any]) -> str | None:
    """One sentence saying how ``answer`` fails ``schema`` (``None``: it matches)."""
    from jsonschema.exceptions import best_match
    from jsonschema.validators import validator_for

    try:
        value = json.loads(answer)
    except ValueError as exc:
        return f"The final answer is not JSON, so it does not match the output schema ({exc})."
    error = best_match(validator_for(schema)(schema).iter_errors(value))
    if error is None:
        return None
    where = "at the top level" if not error.absolute_path else f"at {error.json_path}"
    return f"The final answer does not match the output schema {where}: {error.message}."


def read_images(paths: Sequence[Path]) -> list[str]:
    """Each image as the data URL the prompt carries; :class:`UserError` for a file that
    is missing, unreadable or not an image."""
    from agent_magics.tools.images import UnreadableImage, prepare_image

    urls = []
    for path in paths:
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise UserError(f"Cannot read the image {path}: {_reason(exc)}.") from None
        try:
            urls.append(prepare_image(data).data_url())
        except UnreadableImage:
            raise UserError(
                f"{path} is not an image that can be read (PNG, JPEG, WebP, GIF...)."
            ) from None
    return urls


def write_last_message(path: Path, text: str) -> None:
    """Write the final answer to ``path``; a failure is said on stderr and the run goes
    on, as Codex's does (the answer is on stdout too, unless ``--json``)."""
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        print(
            for_person(f"cannot write the last message to {path}: {_reason(exc)}.", PROGRAM),
            file=sys.stderr,
        )


def _reason(exc: Exception) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    return str(exc)
