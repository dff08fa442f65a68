"""Model clients: the Responses API (:mod:`.responses`), Chat Completions (:mod:`.chat`),
and offline recordings (:mod:`.replay`).

They take plain values (a URL, a key, numbers); :mod:`agent_magics.agent.providers` builds
the one a session's settings ask for. What they share is in :mod:`.base` (the events
and :class:`~.base.ModelClient`) and :mod:`.http` (posting, retries, SSE).
"""
