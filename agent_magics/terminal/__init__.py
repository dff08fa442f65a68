"""The terminal front end: ``agent-magics exec`` (:mod:`.cli`), its approvals asked on
stdin and events told on stderr (:mod:`.console`), and the offline demo (:mod:`.demo`).
It shares the session, tools and transcript with the notebook; nothing here imports
Jupyter."""
