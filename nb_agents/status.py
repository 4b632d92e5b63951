"""Genkit statuses on the wire: the one status-to-HTTP table, and the ``"<STATUS>: "`` prefix.

`HTTP_STATUS` is the one status-to-HTTP table: the server answers a thrown
error with its code and the client reads a code back into a status with
`status_for_http`.

Genkit JS writes the message of a failed turn's error (``AgentOutput.error``,
and a stored snapshot's ``error``) as ``"<STATUS>: <message>"`` for its own
errors, because a ``GenkitError``'s message holds its status; a thrown error's
body (``{"status", "message"}``, an error frame) carries the bare message.
`with_status_prefix` writes that form, `strip_status_prefix` reads it back, so a
client never shows a status twice; in-process values carry the bare message.
"""

from __future__ import annotations

import re

__all__ = [
    "HTTP_STATUS",
    "http_status",
    "split_status_prefix",
    "status_for_http",
    "strip_status_prefix",
    "with_status_prefix",
]

# Genkit status -> HTTP code (the canonical gRPC to HTTP mapping Genkit uses). Where several
# statuses share a code, the first listed is what a client reads the code back as.
_HTTP: tuple[tuple[str, int], ...] = (
    ("INVALID_ARGUMENT", 400),
    ("FAILED_PRECONDITION", 400),
    ("OUT_OF_RANGE", 400),
    ("UNAUTHENTICATED", 401),
    ("PERMISSION_DENIED", 403),
    ("NOT_FOUND", 404),
    ("ABORTED", 409),
    ("ALREADY_EXISTS", 409),
    ("RESOURCE_EXHAUSTED", 429),
    ("CANCELLED", 499),
    ("INTERNAL", 500),
    ("UNKNOWN", 500),
    ("DATA_LOSS", 500),
    ("UNIMPLEMENTED", 501),
    ("UNAVAILABLE", 503),
    ("DEADLINE_EXCEEDED", 504),
)

HTTP_STATUS: dict[str, int] = dict(_HTTP)
"""Genkit status name -> HTTP status code."""

_STATUS_FOR_CODE: dict[int, str] = {
    413: "RESOURCE_EXHAUSTED",  # a body over the server's limit
    408: "DEADLINE_EXCEEDED",
    **{code: status for status, code in reversed(_HTTP)},
}


def http_status(status: str | None) -> int:
    """The HTTP code for a Genkit status name (500 when unknown).

    Example:
        >>> http_status("FAILED_PRECONDITION"), http_status("NO_SUCH_STATUS")
        (400, 500)
    """
    return HTTP_STATUS.get(status or "", 500)


def status_for_http(code: int) -> str:
    """The Genkit status an HTTP code stands for (``INTERNAL`` for other 5xx, else ``UNKNOWN``).

    Example:
        >>> status_for_http(404), status_for_http(409), status_for_http(502)
        ('NOT_FOUND', 'ABORTED', 'INTERNAL')
    """
    found = _STATUS_FOR_CODE.get(code)
    if found is not None:
        return found
    return "INTERNAL" if code >= 500 else "UNKNOWN"


def with_status_prefix(status: str | None, message: str) -> str:
    """`message` as Genkit JS writes a failed turn's error: ``"<STATUS>: <message>"``.

    Example:
        >>> with_status_prefix("NOT_FOUND", "Snapshot s1 not found.")
        'NOT_FOUND: Snapshot s1 not found.'
        >>> with_status_prefix("NOT_FOUND", "NOT_FOUND: Snapshot s1 not found.")  # once only
        'NOT_FOUND: Snapshot s1 not found.'
    """
    if not status or message.startswith(f"{status}: "):
        return message
    return f"{status}: {message}"


def strip_status_prefix(status: str | None, message: str) -> str:
    """`message` without a leading ``"<STATUS>: "`` that repeats `status`.

    Example:
        >>> strip_status_prefix("NOT_FOUND", "NOT_FOUND: Snapshot s1 not found.")
        'Snapshot s1 not found.'
        >>> strip_status_prefix("INTERNAL", "NOT_FOUND: not this status")
        'NOT_FOUND: not this status'
    """
    if status and message.startswith(f"{status}: "):
        return message[len(status) + 2 :]
    return message


_PREFIX = re.compile(r"^([A-Z][A-Z_]+): ")


def split_status_prefix(message: str) -> tuple[str | None, str]:
    """The Genkit status a message starts with (``"<STATUS>: "``), and the rest.

    Only the status names of `HTTP_STATUS` count, so ``"NOTE: ..."`` is a message.

    Example:
        >>> split_status_prefix("INVALID_ARGUMENT: bad ref")
        ('INVALID_ARGUMENT', 'bad ref')
        >>> split_status_prefix("NOTE: nothing")
        (None, 'NOTE: nothing')
    """
    match = _PREFIX.match(message)
    if match is None or match.group(1) not in HTTP_STATUS:
        return None, message
    return match.group(1), message[match.end() :]
