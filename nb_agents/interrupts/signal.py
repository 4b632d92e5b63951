"""The pause signal, and what marks a call as paused, answered or held.

`Interrupt` is what a tool raises to pause its turn. `CONTROL_KEYS` are the
metadata keys only nb_agents (or a person's answer) writes on a tool call;
`untrusted_call` strips them from a model's calls as they arrive.
`interrupt_digest` names one pause of one call; `held_for_approval` tells a
`ToolApproval` hold by Genkit's message.
"""

from __future__ import annotations

import hashlib
from datetime import timedelta
from typing import Any

from pydantic import BaseModel

from .._json import canonical, to_json_value
from ..expiry import Expiry, check_expires_in
from ..types import Part

__all__ = [
    "APPROVAL_PREFIX",
    "CONTROL_KEYS",
    "Interrupt",
    "held_for_approval",
    "interrupt_digest",
    "untrusted_call",
]


APPROVAL_PREFIX = "Tool not in approved list:"
"""How `ToolApproval`'s pause message starts (Genkit's text, on every runtime)."""

CONTROL_KEYS = frozenset(
    {
        # a pause and its bookkeeping (Genkit's and nb_agents')
        "interrupt",
        "resolvedInterrupt",
        "pendingOutput",
        "pendingRule",
        "expiresAt",
        "onExpiry",
        "started",
        # an answer: what decides whether a held call runs, and what binds it to its pause
        "resumed",
        "replacedInput",
        "expired",
        "interruptDigest",
        "interruptResponse",
        # what answered a call
        "approvedBy",
        "deniedBy",
        "answeredBy",
        "source",
    }
)
"""The metadata keys of a tool-request part that only nb_agents (or a person's answer) writes.

A model's tool call never carries them: `untrusted_call` strips them from each
call as it arrives from the model, before it runs or is stored as a pause, so
nothing a model writes (a prompt-injected ``resumed: {"toolApproved": true}``,
a ``replacedInput``, an ``expired`` mark) can approve, edit or answer a call.
"""


def untrusted_call(part: Part) -> Part:
    """A tool-request part from a model, without the control metadata only nb_agents writes."""
    meta = part.metadata
    if not meta or meta.keys().isdisjoint(CONTROL_KEYS):
        return part
    kept = {k: v for k, v in meta.items() if k not in CONTROL_KEYS}
    return part.model_copy(update={"metadata": kept or None})


def interrupt_digest(request: Part) -> str:
    """What identifies one pause of one call: its name, ref, input and pause data, hashed.

    The answer builders put it in the answer's ``metadata.interruptDigest``, and
    resume validation refuses an answer whose digest is not the paused
    request's: an answer built for one pause cannot resume another that happens
    to share its (name, ref).
    """
    tr = request.tool_request
    assert tr is not None
    body = {
        "name": tr.name,
        "ref": tr.ref,
        "input": tr.input,
        "interrupt": (request.metadata or {}).get("interrupt"),
    }
    return hashlib.sha256(canonical(body).encode()).hexdigest()[:24]


def held_for_approval(part: Part) -> bool:
    """Whether `part` is a call paused by `ToolApproval` (its pause message says so)."""
    data = (part.metadata or {}).get("interrupt")
    return isinstance(data, dict) and str(data.get("message", "")).startswith(APPROVAL_PREFIX)


class Interrupt(Exception):  # noqa: N818 - a control-flow signal, not an error
    """Raised by a tool to pause the turn and hand control to the caller.

    Args:
        data: The pause payload shown to the human: a JSON object (a dict or a
            pydantic model) or None. It lands in ``metadata.interrupt`` of the
            tool request (``true`` when None).
        expires_in: How long this pause waits for an answer (a `timedelta` or
            seconds); None takes the tool's own ``expires_in``, if any.
        on_expiry: What answers it past the deadline (`Expiry`, or a denial
            message); None takes the tool's, else a denial.

    Example:
        >>> raise Interrupt({"details": "Transfer $500 to savings"})  # doctest: +SKIP
        >>> raise Interrupt({"details": "..."}, expires_in=timedelta(minutes=5),
        ...                 on_expiry="Nobody approved the transfer in time.")  # doctest: +SKIP
    """

    def __init__(
        self,
        data: BaseModel | dict[str, Any] | None = None,
        *,
        expires_in: timedelta | float | None = None,
        on_expiry: Expiry | str | None = None,
    ) -> None:
        value = to_json_value(data)
        if value is not None and not isinstance(value, dict):
            raise TypeError(
                "Interrupt data must be a JSON object (a dict or a pydantic model) or None, "
                f"got {type(data).__name__}: {data!r}"
            )
        super().__init__("interrupt")
        self.data: dict[str, Any] | None = value
        self.expires_in = check_expires_in(expires_in)
        self.on_expiry = Expiry.of(on_expiry) if on_expiry is not None else None
