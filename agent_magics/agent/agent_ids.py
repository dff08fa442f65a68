"""Sub-agent ids, statuses and nicknames as the model reads them.

A sub-agent is named by a UUIDv7 (a thread id); an id the model gets wrong is answered
with the words Codex's parser gives (``invalid agent id x: Error(ParseChar { character:
'x', index: 1 })``), since those are what models are used to reading. A status goes back
as Codex serializes it: ``"pending_init"``, ``"running"``, ``{"completed": text}``,
``{"errored": text}``, ``"shutdown"`` or ``"not_found"``.
"""

from __future__ import annotations

import json
import os
import random
import time
import uuid
from typing import Any

from agent_magics.errors import RespondToModel

FINAL = ("completed", "errored", "shutdown", "not_found")
"""Statuses a sub-agent no longer works in (``wait_agent`` returns on them)."""

_NAMES = (
    "Euclid Archimedes Ptolemy Hypatia Avicenna Averroes Aquinas Copernicus Kepler "
    "Galileo Bacon Descartes Pascal Fermat Huygens Leibniz Newton Halley Euler Lagrange "
    "Laplace Volta Gauss Ampere Faraday Darwin Lovelace Boole Pasteur Maxwell Mendel "
    "Curie Planck Tesla Poincare Noether Hilbert Einstein Raman Bohr Turing Hubble "
    "Feynman Franklin McClintock Meitner Herschel Linnaeus Wegener Chandrasekhar Sagan "
    "Goodall Carson Carver Socrates Plato Aristotle Epicurus Cicero Confucius Mencius "
    "Zeno Locke Hume Kant Hegel Kierkegaard Mill Nietzsche Peirce James Dewey Russell "
    "Popper Sartre Beauvoir Arendt Rawls Singer Anscombe Parfit Kuhn Boyle Hooke Harvey "
    "Dalton Ohm Helmholtz Gibbs Lorentz Schrodinger Heisenberg Pauli Dirac Bernoulli "
    "Godel Nash Banach Ramanujan Erdos Jason"
)
NICKNAMES = tuple(_NAMES.split())
"""The names sub-agents are given: the pool Codex 0.171.0 draws from (its binary holds
this list: scientists and thinkers, and Jason)."""


def new_agent_id() -> str:
    """A UUIDv7: the time in milliseconds, then random bits (as Codex's thread ids)."""
    ms = time.time_ns() // 1_000_000
    rand = int.from_bytes(os.urandom(10), "big")
    value = (ms & (2**48 - 1)) << 80 | 0x7 << 76 | (rand >> 68 & 0xFFF) << 64
    value |= 0b10 << 62 | rand & (2**62 - 1)
    return str(uuid.UUID(int=value))


def parse_agent_id(text: str) -> str:
    """The id in its usual form, or the model is told it is not one, in the words of the
    Rust ``uuid`` parser Codex uses (its ``Debug`` form)."""
    try:
        if len(text) in (32, 36, 38, 45):
            return str(uuid.UUID(text))
    except ValueError:
        pass
    raise RespondToModel(f"invalid agent id {text}: Error({_parse_error(text)})")


def _parse_error(text: str) -> str:
    body = text[9:] if text.lower().startswith("urn:uuid:") else text
    offset = len(text) - len(body)
    if body.startswith("{") and body.endswith("}"):
        body, offset = body[1:-1], offset + 1
    for index, char in enumerate(body):
        if char != "-" and char not in "0123456789abcdefABCDEF":
            return f"ParseChar {{ character: {_rust_char(char)}, index: {index + offset + 1} }}"
    groups = body.split("-")
    if len(groups) == 1:
        return f"ParseSimpleLength {{ len: {len(body)} }}"
    if len(groups) != 5:
        return f"ParseGroupCount {{ count: {len(groups)} }}"
    start = offset
    for number, (group, want) in enumerate(zip(groups, (8, 4, 4, 4, 12), strict=True)):
        if len(group) != want:
            return f"ParseGroupLength {{ group: {number}, len: {len(group)}, index: {start + 1} }}"
        start += len(group) + 1
    return "Other"


def _rust_char(char: str) -> str:
    """A character as Rust's ``Debug`` prints it."""
    escapes = {"'": "\\'", "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r", "\0": "\\0"}
    return f"'{escapes.get(char, char)}'"


def status_json(status: str, text: str | None = None) -> Any:
    """A status as Codex serializes it (the text of a completed or errored agent with it)."""
    if status in ("completed", "errored"):
        return {status: text}
    return status


def dumps(value: Any) -> str:
    """JSON as Codex's serde writes it: compact, characters kept as they are."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


class Nicknames:
    """Picks unused names at random; once all are taken, starts over with ordinals
    ("Kant the 2nd"), as Codex does."""

    def __init__(self) -> None:
        self._used: set[str] = set()
        self._round = 0

    def take(self) -> str:
        free = [n for n in map(self._name, NICKNAMES) if n not in self._used]
        if not free:
            self._used.clear()
            self._round += 1
            free = [self._name(n) for n in NICKNAMES]
        name = random.choice(free)
        self._used.add(name)
        return name

    def keep(self, name: str) -> None:
        """Count ``name`` as taken (a resumed session's child keeps its name)."""
        self._used.add(name)

    def _name(self, name: str) -> str:
        if not self._round:
            return name
        value = self._round + 1
        suffix = (
            "th"
            if value % 100 in (11, 12, 13)
            else {1: "st", 2: "nd", 3: "rd"}.get(value % 10, "th")
        )
        return f"{name} the {value}{suffix}"
