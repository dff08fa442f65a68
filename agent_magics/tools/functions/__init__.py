"""A person's Python functions as tools: ``@agent_magics.tool`` and the functions it
registers (:mod:`.registered`), and a function seen as a tool: its schema, its
arguments, its answer (:mod:`.schema`)."""
