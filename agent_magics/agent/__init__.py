"""The conversation: a session's history and turns (:mod:`.session`), one model response
read as it streams (:mod:`.sampling`), what the model is told before the conversation
(:mod:`.instructions`, :mod:`.turn_messages`), the model client the settings ask for
(:mod:`.providers`) and the secrets kept out of everything a session writes
(:mod:`.redaction`). Front ends drive it; it never imports them."""
