"""The cell's widgets and what drives them: the transcript widget that places the
transcript's HTML (:mod:`agent_magics.transcript`), the approval cards and their approver,
the line commands, headless and terminal runs."""
