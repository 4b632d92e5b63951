"""The error tree of nb_agents.

Every error nb_agents raises derives from one root and carries a Genkit status
(the canonical gRPC status names Genkit uses on the wire)::

    NbAgentsError                    status, message, details
    ├── InvalidArgumentError         INVALID_ARGUMENT: bad input, rejected resume
    ├── FailedPreconditionError      FAILED_PRECONDITION: misuse, wrong state
    ├── NotFoundError                NOT_FOUND: unknown snapshot, agent, model
    ├── PermissionDeniedError        PERMISSION_DENIED: a forged or unsigned state blob
    ├── AbortedError                 ABORTED: the turn was aborted
    ├── InternalError                INTERNAL: a tool or the model raised
    └── AgentError                   a turn ended with finish reason "failed"

`Interrupt` and `ToolFail` (in `nb_agents.tools`) are control-flow signals a
tool raises, not errors, and are deliberately outside this tree.
"""

from __future__ import annotations

import traceback
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .types import AgentErrorInfo

__all__ = [
    "AbortedError",
    "AgentError",
    "FailedPreconditionError",
    "InternalError",
    "InvalidArgumentError",
    "NbAgentsError",
    "NotFoundError",
    "PermissionDeniedError",
    "error_for_status",
    "error_info",
]


class NbAgentsError(Exception):
    """The root of every nb_agents error.

    Attributes:
        status: The Genkit status name, e.g. ``"INVALID_ARGUMENT"``.
        message: The human-readable message, without the status prefix.
        details: Optional extra data (a traceback, the offending value, ...).
    """

    status: str = "UNKNOWN"

    def __init__(self, message: str, *, status: str | None = None, details: Any = None) -> None:
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status
        self.details = details

    def __str__(self) -> str:
        return f"{self.status}: {self.message}"

    def to_wire(self) -> dict[str, Any]:
        """The error as Genkit puts it on the wire: ``{status, message, details?}``."""
        out: dict[str, Any] = {"status": self.status, "message": self.message}
        if self.details is not None:
            out["details"] = self.details
        return out


class InvalidArgumentError(NbAgentsError):
    """Input that can never be valid: a forged restart, an unknown ref, bad schema."""

    status = "INVALID_ARGUMENT"


class FailedPreconditionError(NbAgentsError):
    """A valid request sent at the wrong time or to the wrong kind of agent."""

    status = "FAILED_PRECONDITION"


class NotFoundError(NbAgentsError):
    """A snapshot, session, agent or model that does not exist."""

    status = "NOT_FOUND"


class PermissionDeniedError(NbAgentsError):
    """The caller may not do this: e.g. a client-managed state blob that was
    modified, or sent without the signature the agent's ``state_secret`` requires."""

    status = "PERMISSION_DENIED"


class AbortedError(NbAgentsError):
    """The turn was aborted before it finished."""

    status = "ABORTED"


class InternalError(NbAgentsError):
    """A tool or a model raised an unexpected exception."""

    status = "INTERNAL"


class AgentError(NbAgentsError):
    """A chat turn ended with finish reason ``failed``.

    Raised by the chat API (`Chat.send`, `Chat.resume`, ...). The run API
    (`Agent.run`) returns the failure in-band instead. Nothing was consumed:
    the chat still points at the last good snapshot or state, so a rejected
    resume can simply be answered again.

    Attributes:
        response: The `AgentResponse` of the failed turn.
    """

    def __init__(
        self, message: str, *, status: str | None = None, details: Any = None, response: Any = None
    ) -> None:
        super().__init__(message, status=status, details=details)
        self.response = response

    @property
    def snapshot_id(self) -> str | None:
        """The last good snapshot (server-managed agents)."""
        return getattr(self.response, "snapshot_id", None)

    @property
    def state(self) -> Any:
        """The last good state (client-managed agents)."""
        return getattr(self.response, "state", None)


_BY_STATUS: dict[str, type[NbAgentsError]] = {
    cls.status: cls
    for cls in (
        InvalidArgumentError,
        FailedPreconditionError,
        NotFoundError,
        PermissionDeniedError,
        AbortedError,
        InternalError,
    )
}


def error_for_status(status: str | None, message: str, details: Any = None) -> NbAgentsError:
    """Build the error class that matches a Genkit status name."""
    status = status or "UNKNOWN"
    cls = _BY_STATUS.get(status, NbAgentsError)
    return cls(message, status=status, details=details)


def error_info(exc: BaseException) -> AgentErrorInfo:
    """The wire error of an exception; the traceback goes in the details."""
    from .types import AgentErrorInfo

    if isinstance(exc, NbAgentsError):
        return AgentErrorInfo(status=exc.status, message=exc.message, details=exc.details)
    return AgentErrorInfo(
        status="INTERNAL",
        message=str(exc) or type(exc).__name__,
        details={"type": type(exc).__name__, "traceback": "".join(traceback.format_exception(exc))},
    )
