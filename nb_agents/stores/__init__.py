"""Session stores: where snapshots live.

`InMemorySessionStore` for tests, `FileSessionStore` for readable JSON files,
`SqliteSessionStore`, the embedded default for anything that must survive a
restart.
"""

from .base import AuditRecord, ResumeClaim, SessionStore
from .file import FileSessionStore
from .memory import InMemorySessionStore
from .sqlite import SqliteSessionStore

__all__ = [
    "AuditRecord",
    "FileSessionStore",
    "InMemorySessionStore",
    "ResumeClaim",
    "SessionStore",
    "SqliteSessionStore",
]
