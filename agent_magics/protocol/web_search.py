"""``web_search_call`` items: the searches the model server ran for the hosted tool.

An item comes as ``{"type": "web_search_call", "id", "status", "action": {"type":
"search", "query", "sources": [...]}}`` (or an ``open_page`` / ``find_in_page`` action).
It is kept whole in the history and the session file, so a card can show its sources
after a resume; it goes back to the model as Codex 0.171 sends it: ``id``, ``status``
and the action's own fields only (a search's ``sources`` are not sent back).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

WEB_SEARCH_CALL = "web_search_call"

_ACTION_FIELDS = {
    "search": ("query", "queries"),
    "open_page": ("url",),
    "find_in_page": ("url", "pattern"),
}
"""Each action's fields in Codex's order; an action of another type goes back as
``{"type": "other"}``."""


def sent_form(item: Mapping[str, Any]) -> dict[str, Any]:
    """The item as Codex sends it back in a request's ``input``."""
    out: dict[str, Any] = {"type": WEB_SEARCH_CALL}
    for key in ("id", "status"):
        if isinstance(item.get(key), str):
            out[key] = item[key]
    action = item.get("action")
    if isinstance(action, Mapping):
        kind = action.get("type")
        fields = _ACTION_FIELDS.get(kind) if isinstance(kind, str) else None
        if fields is None:
            out["action"] = {"type": "other"}
        else:
            sent = {"type": kind}
            sent.update({f: action[f] for f in fields if action.get(f) is not None})
            out["action"] = sent
    return out


def search_detail(item: Mapping[str, Any]) -> str:
    """What was searched, in one line: the query (the first of several, with ``...``),
    the page opened, or the pattern looked for in a page (Codex's wording)."""
    action = item.get("action")
    if not isinstance(action, Mapping):
        return ""
    kind = action.get("type")
    url, pattern = _str(action.get("url")), _str(action.get("pattern"))
    if kind == "search":
        queries = [q for q in action.get("queries") or [] if isinstance(q, str)]
        first = queries[0] if queries else ""
        many = f"{first} ..." if len(queries) > 1 and first else first
        return _str(action.get("query")) or many
    if kind == "open_page":
        return url
    if kind == "find_in_page":
        if pattern and url:
            return f"'{pattern}' in {url}"
        return f"'{pattern}'" if pattern else url
    return ""


def sources(item: Mapping[str, Any]) -> list[str]:
    """The pages a search named, when the server returned them (a URL each, its title
    after it when there is one)."""
    action = item.get("action")
    found = action.get("sources") if isinstance(action, Mapping) else None
    out = []
    for source in found if isinstance(found, list) else []:
        if isinstance(source, Mapping) and _str(source.get("url")):
            title = _str(source.get("title"))
            out.append(source["url"] + (f" ({title})" if title else ""))
    return out


def sources_text(item: Mapping[str, Any]) -> str:
    """The card's body: one source a line, or a sentence when none came back."""
    found = sources(item)
    if not found:
        return "(the server named no sources)"
    return "\n".join(found)


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def card_fields(item: Mapping[str, Any], n: int) -> tuple[str, str, str]:
    """Id, query and sources of the card ``item`` shows (an ``events.WebSearched``), the
    ``n``-th search of its response or file (an item without an id gets a card too)."""
    call_id = _str(item.get("id")) or f"web_search_{n}"
    return call_id, search_detail(item), sources_text(item)
