"""Session stores: where snapshots live.

`InMemorySessionStore` for tests, `FileSessionStore` for readable JSON files,
`SqliteSessionStore`, the embedded default for anything that must survive a
restart, `PostgresSessionStore` for several server processes. Each is a
`._base.BaseSessionStore` (the shared rules) over its own storage primitives;
any object that satisfies the `SessionStore` protocol is a store too, and
`nb_agents.testing.stores` checks one against the contract.
"""

import importlib
from typing import TYPE_CHECKING, Any

from .base import AuditRecord, Fence, ResumeClaim, SessionStore
from .memory import InMemorySessionStore

__all__ = [
    "AuditRecord",
    "Fence",
    "FileSessionStore",
    "InMemorySessionStore",
    "PostgresSessionStore",
    "ResumeClaim",
    "SessionStore",
    "SqliteSessionStore",
]

if TYPE_CHECKING:
    from .file import FileSessionStore
    from .postgres import PostgresSessionStore
    from .sqlite import SqliteSessionStore

# The durable stores load on first use (psycopg is optional and heavy).
_LAZY = {"FileSessionStore": ".file", "SqliteSessionStore": ".sqlite", "PostgresSessionStore": ".postgres"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module, __name__), name)
