"""nb_agents: LLM agents whose turns pause for a human, Jupyter-native.

A tool call can *interrupt* a turn; the caller answers with ``respond`` or
``restart`` parts and the turn resumes where it paused. The behaviour and the
wire shapes are Genkit's agent API.

Example:
    >>> import nb_agents as nba
    >>> from nb_agents.testing import ScriptedModel
    >>> agent = nba.define_agent("hello", model=ScriptedModel([
    ...     {"message": {"role": "model", "content": [{"text": "hi!"}]}, "finishReason": "stop"}]))
    >>> agent.chat().send_sync("hello").text
    'hi!'
"""

import importlib
from typing import TYPE_CHECKING, Any

from . import middleware, notify
from . import render as _render  # noqa: F401 - registers how results display
from .agent import Agent
from .chat import AgentTurn, Chat, DetachedTask
from .connection import AgentConnection
from .define import define_agent, define_custom_agent
from .errors import (
    AbortedError,
    AgentError,
    AlreadyResumedError,
    FailedPreconditionError,
    InternalError,
    InvalidArgumentError,
    NbAgentsError,
    NotFoundError,
    PermissionDeniedError,
    ResourceExhaustedError,
    UnauthenticatedError,
    UnavailableError,
)
from .expiry import Expiry
from .interrupts import AgentInterrupt, ApprovalHold, Interrupt, InterruptCall, interrupt_as
from .listings import AuditTrail, InboxItem, PendingTurn, PendingTurns
from .models.base import Model, register_model, register_provider
from .models.errors import ModelError
from .protocol import AgentEndpoint, BaseAgent
from .responses import AgentChunk, AgentResponse
from .rules import ApprovalRule, SessionRule, SessionRules
from .session import Session, TurnContext
from .stores import AuditRecord, InMemorySessionStore, SessionStore
from .tools import Tool, ToolContext, ToolFail, define_interrupt, resumable_tool, tool
from .types import (
    AgentInit,
    AgentInput,
    AgentOutput,
    AgentStreamChunk,
    Artifact,
    CallOptions,
    FinishReason,
    GenerateRequest,
    GenerateResponse,
    Message,
    ModelResponseChunk,
    Part,
    SessionSnapshot,
    SessionState,
    SnapshotStatus,
    ToolRequest,
    ToolResponse,
    ToolResume,
    TurnEnd,
)

if TYPE_CHECKING:
    from .remote import RemoteAgent, remote_agent
    from .stores.file import FileSessionStore
    from .stores.postgres import PostgresSessionStore
    from .stores.sqlite import SqliteSessionStore

__version__ = "0.1.0"


# Imported on first use, so that `import nb_agents` stays fast and light: the
# durable stores, the HTTP client (httpx) and PostgreSQL (psycopg).
_LAZY = {
    "FileSessionStore": "nb_agents.stores.file",
    "SqliteSessionStore": "nb_agents.stores.sqlite",
    "PostgresSessionStore": "nb_agents.stores.postgres",
    "RemoteAgent": "nb_agents.remote",
    "remote_agent": "nb_agents.remote",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "AbortedError",
    "Agent",
    "AgentChunk",
    "AgentConnection",
    "AgentEndpoint",
    "AgentError",
    "AgentInit",
    "AgentInput",
    "AgentInterrupt",
    "AgentOutput",
    "AgentResponse",
    "AgentStreamChunk",
    "AgentTurn",
    "AlreadyResumedError",
    "ApprovalHold",
    "ApprovalRule",
    "Artifact",
    "AuditRecord",
    "AuditTrail",
    "BaseAgent",
    "CallOptions",
    "Chat",
    "DetachedTask",
    "Expiry",
    "FailedPreconditionError",
    "FileSessionStore",
    "FinishReason",
    "GenerateRequest",
    "GenerateResponse",
    "InMemorySessionStore",
    "InboxItem",
    "InternalError",
    "Interrupt",
    "InterruptCall",
    "InvalidArgumentError",
    "Message",
    "Model",
    "ModelError",
    "ModelResponseChunk",
    "NbAgentsError",
    "NotFoundError",
    "Part",
    "PendingTurn",
    "PendingTurns",
    "PermissionDeniedError",
    "PostgresSessionStore",
    "RemoteAgent",
    "ResourceExhaustedError",
    "Session",
    "SessionRule",
    "SessionRules",
    "SessionSnapshot",
    "SessionState",
    "SessionStore",
    "SnapshotStatus",
    "SqliteSessionStore",
    "Tool",
    "ToolContext",
    "ToolFail",
    "ToolRequest",
    "ToolResponse",
    "ToolResume",
    "TurnContext",
    "TurnEnd",
    "UnauthenticatedError",
    "UnavailableError",
    "__version__",
    "define_agent",
    "define_custom_agent",
    "define_interrupt",
    "interrupt_as",
    "middleware",
    "notify",
    "register_model",
    "register_provider",
    "remote_agent",
    "resumable_tool",
    "tool",
]
