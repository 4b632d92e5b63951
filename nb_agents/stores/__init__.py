"""Session stores: where snapshots live (memory now; file, SQLite, Postgres)."""

from .base import ResumeClaim, SessionStore
from .memory import InMemorySessionStore

__all__ = ["InMemorySessionStore", "ResumeClaim", "SessionStore"]
