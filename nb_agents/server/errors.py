"""Errors on the HTTP wire: Genkit status names to HTTP codes, and what a client may see.

A thrown error (init misuse, a bad request, an unknown snapshot) answers with the
HTTP code of its Genkit status and the body ``{"status", "message"}``, the shape
Genkit's express handler sends. The codes are Genkit's, from the one table in
`nb_agents.errors` (`HTTP_STATUS`), which the client reads back too: 400 for
``INVALID_ARGUMENT`` and ``FAILED_PRECONDITION``, 403 for ``PERMISSION_DENIED``,
404 for ``NOT_FOUND``, 500 for ``INTERNAL`` and anything unknown. A failed
*turn* is not an error here: it is a 200 with finish reason ``failed``.

Tracebacks and exception texts stay on the server: `redact` drops
``details.traceback`` from every error that goes out and, where the error says
what may be shown instead (``details.public``: a failed tool's name, status and
exception type), puts that in place of the message, which may quote a file path
or a secret. The app created with ``debug=True`` sends everything.

`outgoing` is what every output and snapshot goes through on its way out: the
error message of a failed turn gets Genkit's ``STATUS: `` prefix where Genkit JS
writes one (an error of nb_agents' own, as a ``GenkitError``; not an exception
a tool, model or handler raised, whose shown message is its ``public`` text),
then `redact`. Thrown-error bodies and error frames carry the bare message, as
Genkit's ``toJSON`` does.
"""

from __future__ import annotations

import logging
from typing import Any

from starlette.responses import JSONResponse

from ..errors import HTTP_STATUS, NbAgentsError, RequestError, http_status, with_status_prefix

__all__ = [
    "HTTP_STATUS",
    "RequestError",
    "error_body",
    "error_response",
    "http_status",
    "outgoing",
    "redact",
]

log = logging.getLogger("nb_agents.server")


def outgoing(wire: dict[str, Any], *, debug: bool) -> dict[str, Any]:
    """An output or a snapshot (wire form) as it goes out: Genkit's error message, redacted."""
    err = wire.get("error")
    if isinstance(err, dict) and isinstance(err.get("message"), str):
        details = err.get("details")
        raised = (
            isinstance(details, dict) and "public" in details
        )  # user code raised: Genkit JS has no prefix
        if not raised:
            wire = {
                **wire,
                "error": {**err, "message": with_status_prefix(err.get("status"), err["message"])},
            }
    return redact(wire, debug=debug)


def redact(wire: dict[str, Any], *, debug: bool) -> dict[str, Any]:
    """`wire` (an output, a snapshot or an error) without ``error.details.traceback``."""
    if debug:
        return wire
    err = wire.get("error")
    if isinstance(err, dict):
        return {**wire, "error": _strip(err)}
    if "details" in wire:
        return _strip(wire)
    return wire


def _strip(err: dict[str, Any]) -> dict[str, Any]:
    details = err.get("details")
    if not isinstance(details, dict) or not ("traceback" in details or "public" in details):
        return err
    kept = {k: v for k, v in details.items() if k not in ("traceback", "public")}
    out = {k: v for k, v in err.items() if k != "details"}
    if isinstance(details.get("public"), str):
        out["message"] = details["public"]
    if kept:
        out["details"] = kept
    return out


def error_body(exc: BaseException, *, debug: bool) -> dict[str, Any]:
    """``{"status", "message", "details"?}`` for a thrown error.

    An exception that is not an `NbAgentsError` is a bug on the server: it is
    logged, and the client sees only ``INTERNAL: Internal Error`` (or the
    message and traceback with ``debug=True``).
    """
    if isinstance(exc, NbAgentsError):
        return redact(exc.to_wire(), debug=debug)
    log.error("unexpected error while serving an agent", exc_info=exc)
    if not debug:
        return {"status": "INTERNAL", "message": "Internal Error"}
    import traceback

    return {
        "status": "INTERNAL",
        "message": str(exc) or type(exc).__name__,
        "details": {"type": type(exc).__name__, "traceback": "".join(traceback.format_exception(exc))},
    }


def error_response(exc: BaseException, *, debug: bool) -> JSONResponse:
    """The HTTP response for a thrown error."""
    body = error_body(exc, debug=debug)
    code = exc.http_code if isinstance(exc, RequestError) else http_status(body.get("status"))
    return JSONResponse(body, status_code=code)
