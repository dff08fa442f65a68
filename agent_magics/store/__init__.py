"""Sessions on disk: written as they happen, listed, read back and resumed."""

from agent_magics.store.log import LoadedSession, SessionLog, read_session

__all__ = ["LoadedSession", "SessionLog", "read_session"]
