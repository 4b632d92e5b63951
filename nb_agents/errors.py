"""The error tree of nb_agents, and the one table from Genkit statuses to HTTP codes.

Every exception nb_agents raises derives from one root and carries a Genkit
status (the canonical gRPC status names Genkit uses on the wire), so
``except nba.NbAgentsError`` catches all of them::

    NbAgentsError                    status, message, details
    ├── InvalidArgumentError         INVALID_ARGUMENT: bad input, a rejected resume
    │   ├── RequestError             an HTTP request refused before it reached an agent
    │   │                            (too big, not JSON, wrong shape); carries its HTTP code
    │   ├── CliError                 a mistake on the ``nb-agents`` command line (server.cli)
    │   └── FieldError               a notebook form field holding no value (notebook; a ValueError too)
    ├── FailedPreconditionError      FAILED_PRECONDITION: misuse, wrong state
    │   ├── StaleClaimError          a write made under a resume claim that was taken over
    │   └── AlreadyResumedError      an answer to a pause another answer took (an AgentError too)
    ├── NotFoundError                NOT_FOUND: unknown snapshot, agent, model
    ├── UnauthenticatedError         UNAUTHENTICATED: no or bad credentials
    ├── PermissionDeniedError        PERMISSION_DENIED: not allowed; a forged state blob
    │   └── LinkError                an answer link tampered with, or expired (nb_agents.notify)
    ├── ResourceExhaustedError       RESOURCE_EXHAUSTED: over a limit
    ├── AbortedError                 ABORTED: the turn was aborted
    ├── UnavailableError             UNAVAILABLE: a remote agent could not be reached
    ├── InternalError                INTERNAL: a tool or the model raised
    ├── FrameError                   INTERNAL: a stream frame that is not JSON (frames; a ValueError too)
    ├── AgentError                   a chat turn ended with finish reason "failed"
    ├── ModelError                   a model provider call failed (nb_agents.models.errors)
    │   ├── AuthenticationError      UNAUTHENTICATED (401)
    │   │   └── MissingApiKeyError   no key configured
    │   ├── ModelPermissionDeniedError  PERMISSION_DENIED (403)
    │   ├── BadRequestError          INVALID_ARGUMENT (400, 413, 422)
    │   ├── ModelNotFoundError       NOT_FOUND (404)
    │   ├── RateLimitError           RESOURCE_EXHAUSTED (429, retried)
    │   ├── OverloadedError          UNAVAILABLE (503, 529, retried)
    │   ├── ModelServerError         INTERNAL (5xx, retried)
    │   ├── ModelConnectionError     UNAVAILABLE (unreachable, retried)
    │   ├── ModelTimeoutError        DEADLINE_EXCEEDED
    │   └── ModelResponseError       INTERNAL (an answer we could not read)
    └── MCPError                     an MCP server failed us; ``server`` names it (nb_agents.mcp)
        ├── MCPConnectionError       UNAVAILABLE (an UnavailableError too): would not start, died
        ├── MCPSchemaError           FAILED_PRECONDITION (a FailedPreconditionError too): a
        │                            tool listing we cannot use
        └── MCPCallLostError         FAILED_PRECONDITION (likewise): an answer to an elicitation
                                     whose call is gone

The package's internal signals sit in the tree as well, though none reaches a
caller: `PreTurnFailureError` (a failure found before a turn, answered in-band),
`ClientStalledError` (``DEADLINE_EXCEEDED``: a streaming client stopped reading,
dropped as a disconnect), `ClaimRacedError` (a PostgreSQL claim race, run again),
`_RowChangedError` (``ABORTED``: a PostgreSQL row written while it was read, read again)
and the SQLite store's busy and not-ready signals.

A model error is a `ModelError` first: catch ``ModelError`` for "the provider
failed", or a status class here for "anything with that status", which the
model errors' statuses also tell (``err.status``).

`Interrupt` and `ToolFail` (in `nb_agents.interrupts` and `nb_agents.tools`) are
control-flow signals a tool raises, not errors, and are deliberately outside
this tree (``tests/test_error_tree.py`` holds every other exception class to it).

How a status travels (the one status-to-HTTP table, and Genkit's ``"<STATUS>: "``
message prefix) is `nb_agents.status`; its names are re-exported here.
"""

from __future__ import annotations

from typing import Any

from .status import (
    HTTP_STATUS,
    http_status,
    split_status_prefix,
    status_for_http,
    strip_status_prefix,
    with_status_prefix,
)

__all__ = [
    "HTTP_STATUS",
    "AbortedError",
    "AgentError",
    "AlreadyResumedError",
    "FailedPreconditionError",
    "InternalError",
    "InvalidArgumentError",
    "NbAgentsError",
    "NotFoundError",
    "PermissionDeniedError",
    "RequestError",
    "StaleClaimError",
    "ResourceExhaustedError",
    "UnauthenticatedError",
    "UnavailableError",
    "error_for_status",
    "http_status",
    "split_status_prefix",
    "status_for_http",
    "strip_status_prefix",
    "with_status_prefix",
]


class NbAgentsError(Exception):
    """The root of every nb_agents error.

    Attributes:
        status: The Genkit status name, e.g. ``"INVALID_ARGUMENT"``.
        message: The human-readable message, without the status prefix.
        details: Optional extra data (a traceback, the offending value, ...).

    Example:
        >>> err = NotFoundError("Snapshot s1 not found.")
        >>> (err.status, str(err), isinstance(err, NbAgentsError))
        ('NOT_FOUND', 'NOT_FOUND: Snapshot s1 not found.', True)
    """

    status: str = "UNKNOWN"
    ran_nothing: bool = False
    """Raised by a tool before it did anything (an error of this kind promises no side effect):
    the answer that ran it was not acted on, and another answer may be given instead."""

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


class RequestError(InvalidArgumentError):
    """An HTTP request refused before it reached an agent (too big, bad JSON, bad shape).

    Attributes:
        http_code: The HTTP status to answer with, when it is not the one the
            Genkit status implies (413 for a body over the size limit).
    """

    def __init__(
        self, message: str, *, status: str = "INVALID_ARGUMENT", http_code: int | None = None
    ) -> None:
        super().__init__(message, status=status)
        self.http_code = http_code if http_code is not None else http_status(status)


class FailedPreconditionError(NbAgentsError):
    """A valid request sent at the wrong time or to the wrong kind of agent."""

    status = "FAILED_PRECONDITION"


class StaleClaimError(FailedPreconditionError):
    """A store refused a write made under a resume claim that is no longer the current one.

    The claim on the paused snapshot was replaced (a takeover after the
    worker's heartbeat expired, or an explicit retry) or released since the
    write's turn claimed it; the store wrote nothing. `details` holds the ids
    and generations: ``parentId``, ``childId``, ``generation`` (the write's)
    and ``current`` (the claim now, ``{childId, generation}``, or None).

    Example:
        >>> err = StaleClaimError.of("paused", "resume-1", 1, ("resume-2", 2))
        >>> err.details["current"]
        {'childId': 'resume-2', 'generation': 2}
    """

    @classmethod
    def of(
        cls, parent_id: str, child_id: str, generation: int, current: tuple[str, int] | None
    ) -> StaleClaimError:
        """The error for a write of `child_id` fenced with `generation`, where the claim is now `current`."""
        now = (
            f"which is now generation {current[1]} (snapshot {current[0]})"
            if current is not None
            else "which is no longer claimed"
        )
        return cls(
            f"Snapshot {child_id} was not written: it runs under generation {generation} of the claim "
            f"on snapshot {parent_id}, {now}.",
            details={
                "parentId": parent_id,
                "childId": child_id,
                "generation": generation,
                "current": {"childId": current[0], "generation": current[1]} if current else None,
            },
        )


class NotFoundError(NbAgentsError):
    """A snapshot, session, agent or model that does not exist (or that the caller may not see)."""

    status = "NOT_FOUND"


class UnauthenticatedError(NbAgentsError):
    """The request carries no credentials, or credentials that do not check out (HTTP 401)."""

    status = "UNAUTHENTICATED"


class PermissionDeniedError(NbAgentsError):
    """The caller may not do this: e.g. a client-managed state blob that was
    modified, or sent without the signature the agent's ``state_secret`` requires."""

    status = "PERMISSION_DENIED"


class ResourceExhaustedError(NbAgentsError):
    """A limit was reached: a request too large, too many at once."""

    status = "RESOURCE_EXHAUSTED"


class AbortedError(NbAgentsError):
    """The turn was aborted before it finished."""

    status = "ABORTED"


class UnavailableError(NbAgentsError):
    """A service the call needs (a remote agent) could not be reached; trying again may work."""

    status = "UNAVAILABLE"


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


class AlreadyResumedError(AgentError, FailedPreconditionError):
    """An answer to a pause that another answer already took (exactly-once resume).

    Raised by the chat API as the `AgentError` of that refused turn; in-band it is a
    failed output whose error has status ``FAILED_PRECONDITION`` and
    ``details.alreadyResumed``: the snapshot of the turn the first answer ran.

    Attributes:
        by: That snapshot (continue from it instead of answering again).
    """

    status = "FAILED_PRECONDITION"

    @property
    def by(self) -> str | None:
        return self.details.get("alreadyResumed") if isinstance(self.details, dict) else None


_BY_STATUS: dict[str, type[NbAgentsError]] = {
    cls.status: cls
    for cls in (
        InvalidArgumentError,
        FailedPreconditionError,
        NotFoundError,
        UnauthenticatedError,
        PermissionDeniedError,
        ResourceExhaustedError,
        AbortedError,
        UnavailableError,
        InternalError,
    )
}


def error_for_status(status: str | None, message: str, details: Any = None) -> NbAgentsError:
    """The error class that matches a Genkit status name, built.

    Example:
        >>> type(error_for_status("NOT_FOUND", "gone")).__name__
        'NotFoundError'
    """
    status = status or "UNKNOWN"
    cls = _BY_STATUS.get(status, NbAgentsError)
    return cls(message, status=status, details=details)
