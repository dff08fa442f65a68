"""What the model reads about each built-in tool: names, descriptions, parameter schemas.

They live apart from the handlers so that a session's tool list, sent with every request,
is built without importing any handler (and what the handlers import: pydantic models,
Pillow, the process machinery); a handler module is imported when its tool is first
called (:class:`agent_magics.tools.registry.LazyHandler`).
"""
