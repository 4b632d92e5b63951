"""Session stores: where snapshots live.

`InMemorySessionStore` for tests, `FileSessionStore` for readable JSON files,
`SqliteSessionStore`, the embedded default for anything that must survive a
restart.
"""

from typing import TYPE_CHECKING, Any

from .base import AuditRecord, ResumeClaim, SessionStore
from .file import FileSessionStore
from .memory import InMemorySessionStore
from .sqlite import SqliteSessionStore

__all__ = [
    "AuditRecord",
    "FileSessionStore",
    "InMemorySessionStore",
    "PostgresSessionStore",
    "ResumeClaim",
    "SessionStore",
    "SqliteSessionStore",
]

if TYPE_CHECKING:
    from .postgres import PostgresSessionStore


def __getattr__(name: str) -> Any:
    # psycopg is optional and heavy: import the PostgreSQL store only when asked for
    if name == "PostgresSessionStore":
        from .postgres import PostgresSessionStore

        return PostgresSessionStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
