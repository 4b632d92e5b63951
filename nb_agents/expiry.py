"""Deadlines on interrupts: how long a pause waits, and what answers it when nobody does.

A pause may carry a deadline: ``expires_in=`` on `define_interrupt`, on
`resumable_tool`, on `ToolApproval`, or per call (``Interrupt(data,
expires_in=...)``). The paused tool-request part then carries it on the wire
beside Genkit's ``metadata.interrupt``:

* ``metadata.expiresAt``: the deadline, ISO 8601 UTC (``2026-12-02T14:02:00.000Z``);
* ``metadata.onExpiry``: the declared default, as data (`Expiry.to_wire`), so any
  process that reads the snapshot applies the same one.

Past the deadline the default is applied once, through the same exactly-once
claim as a person's answer, by whichever reader notices first (a resume or send
on the session, ``agent.pending()``, ``agent.get_snapshot``, ``agent.expire_due()``),
and an answer that arrives later is refused with ``FAILED_PRECONDITION``.

The clock is wall-clock UTC (`now`), one seam for the whole package.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import ValidationError

from ._json import canonical, to_json_value
from .types import Part

__all__ = [
    "MAX_EXPIRES_IN",
    "Expiry",
    "check_expires_in",
    "checked_default",
    "deadline_of",
    "default_on",
    "denial_message",
    "describe",
    "expires_at",
    "is_due",
    "iso",
    "now",
    "parse",
]


def now() -> datetime:
    """The current time, UTC (the one clock deadlines are read with)."""
    return datetime.now(UTC)


def iso(at: datetime) -> str:
    """`at` as ISO 8601 UTC with milliseconds and a ``Z`` (what ``expiresAt`` holds)."""
    return at.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse(ts: str | None) -> datetime | None:
    """An ISO 8601 time (``expiresAt``, a timing's ``at``) as an aware datetime (UTC when it
    names no zone), or None when there is none or it cannot be read."""
    if not ts:
        return None
    try:
        at = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except (ValueError, AttributeError):
        return None
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


MAX_EXPIRES_IN = timedelta(days=366)
"""The longest wait a deadline may set: a year (and a day), far inside what a date can hold."""


def check_expires_in(value: timedelta | float | None, where: str = "expires_in") -> timedelta | None:
    """`value` (a `timedelta` or seconds) as a positive `timedelta` up to `MAX_EXPIRES_IN`; None stays None.

    Example:
        >>> check_expires_in(90)
        datetime.timedelta(seconds=90)
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, timedelta | int | float):
        raise TypeError(
            f"{where} must be a timedelta or a number of seconds, got {type(value).__name__}: {value!r}"
        )
    try:
        seconds = value.total_seconds() if isinstance(value, timedelta) else float(value)
    except OverflowError:  # an int too large for a float
        seconds = math.inf
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"{where} must be a positive, finite duration, got {value!r}")
    if seconds > MAX_EXPIRES_IN.total_seconds():
        raise ValueError(
            f"{where} must be at most {MAX_EXPIRES_IN.days} days (a deadline that far is no deadline: "
            f"give None to wait forever), got {value!r}"
        )
    return value if isinstance(value, timedelta) else timedelta(seconds=seconds)


class Expiry:
    """What answers a pause that nobody answered before its deadline (``on_expiry=``).

    Three defaults, built with the class methods:

    * ``Expiry.deny(message)``: the call is refused; the model sees
      ``{"error": message}`` as the tool's output (the default when
      ``on_expiry`` is not given, with a message naming the deadline);
    * ``Expiry.respond(output)``: ``output`` is the answer, as if a person had
      responded with it (checked against the tool's output schema at definition);
    * ``Expiry.approve()``: for `ToolApproval` holds only: the call is approved and runs.

    A plain string is short for ``Expiry.deny(that_string)``.

    Example:
        >>> from datetime import timedelta
        >>> import nb_agents as nba
        >>> ask = nba.define_interrupt(name="confirm", output_schema=bool,
        ...                            expires_in=timedelta(hours=1), on_expiry=nba.Expiry.respond(False))
        >>> ask.on_expiry
        Expiry.respond(False)
    """

    __slots__ = ("kind", "value")

    def __init__(self, kind: str, value: Any = None) -> None:
        if kind not in ("deny", "respond", "approve"):
            raise ValueError(f"an Expiry is 'deny', 'respond' or 'approve', got {kind!r}")
        if kind == "deny" and value is not None and not isinstance(value, str):
            raise TypeError(f"Expiry.deny takes a message string, got {type(value).__name__}: {value!r}")
        self.kind = kind
        self.value = to_json_value(value) if kind == "respond" else value

    @classmethod
    def deny(cls, message: str | None = None) -> Expiry:
        """Refuse the call; the model sees ``{"error": message}`` (a message naming the deadline if None)."""
        return cls("deny", message)

    @classmethod
    def respond(cls, output: Any) -> Expiry:
        """Answer with `output`, as a person's respond would."""
        return cls("respond", output)

    @classmethod
    def approve(cls) -> Expiry:
        """Approve the held call (`ToolApproval` holds only): it runs."""
        return cls("approve")

    @classmethod
    def of(cls, value: Expiry | str | None) -> Expiry:
        """An ``on_expiry=`` argument as an `Expiry` (None is a denial, a str a denial with that message)."""
        if value is None:
            return cls.deny()
        if isinstance(value, str):
            return cls.deny(value)
        if isinstance(value, Expiry):
            return value
        raise TypeError(
            "on_expiry must be an Expiry (Expiry.deny(msg), Expiry.respond(output), Expiry.approve()) "
            f"or a denial message, got {type(value).__name__}: {value!r}"
        )

    def to_wire(self) -> dict[str, Any]:
        """The default as ``metadata.onExpiry`` holds it.

        One of ``{"deny": msg}`` (msg may be None), ``{"respond": output}``, ``{"approve": true}``.
        """
        if self.kind == "approve":
            return {"approve": True}
        return {self.kind: self.value}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Expiry) and (self.kind, self.value) == (other.kind, other.value)

    def __hash__(self) -> int:
        return hash((self.kind, repr(self.value)))

    def __repr__(self) -> str:
        return f"Expiry.{self.kind}({'' if self.value is None else repr(self.value)})"


def checked_default(on_expiry: Expiry | str, *, tool: str, check_output: Callable[[Any], None]) -> Expiry:
    """`on_expiry` for the own pauses of `tool`, refused at definition if it could never apply.

    ``Expiry.approve()`` is for `ToolApproval` holds only; an ``Expiry.respond``
    output must pass `check_output` (the tool's output schema).
    """
    found = Expiry.of(on_expiry)
    if found.kind == "approve":
        raise ValueError(
            f"on_expiry=Expiry.approve() applies to ToolApproval holds only; tool '{tool}' pauses "
            "for an answer: give Expiry.respond(output) or Expiry.deny(message)"
        )
    if found.kind == "respond":
        try:
            check_output(found.value)
        except ValidationError as exc:
            raise ValueError(
                f"on_expiry=Expiry.respond({found.value!r}) does not fit the output schema of tool "
                f"'{tool}': {exc}"
            ) from exc
    return found


def deadline_of(part: Part) -> datetime | None:
    """The deadline a paused part carries (``metadata.expiresAt``), or None."""
    raw = (part.metadata or {}).get("expiresAt")
    return parse(raw) if isinstance(raw, str) else None


def expires_at(part: Part) -> str | None:
    """The ``metadata.expiresAt`` string of a paused part, or None."""
    raw = (part.metadata or {}).get("expiresAt")
    return raw if isinstance(raw, str) else None


def is_due(part: Part, at: datetime | None = None) -> bool:
    """Whether `part` is a pause whose deadline has passed (at `at`, default now)."""
    if not part.is_interrupt:
        return False
    deadline = deadline_of(part)
    return deadline is not None and (at or now()) >= deadline


def default_on(part: Part) -> dict[str, Any]:
    """The declared default of a paused part (``metadata.onExpiry``); a denial when absent or unreadable."""
    raw = (part.metadata or {}).get("onExpiry")
    if isinstance(raw, dict) and len(raw) == 1 and next(iter(raw)) in ("deny", "respond", "approve"):
        return raw
    return {"deny": None}


def denial_message(part: Part) -> str:
    """What the model sees when `part`'s deadline passed and its default is a denial."""
    message = default_on(part).get("deny")
    if isinstance(message, str) and message:
        return message
    name = part.tool_request.name if part.tool_request else "the tool"
    return f"Nobody answered the call to '{name}' before it expired at {expires_at(part)}; it was denied."


def describe(part: Part, *, brief: bool = False) -> str:
    """The default of `part` in words: ``denied ("...")``, ``answered with {...}``, ``approved``.

    With `brief` (what a form shows), a denial with the default message is just ``denied``.
    """
    default = default_on(part)
    if "approve" in default:
        return "approved"
    if "respond" in default:
        return f"answered with {canonical(default['respond'])}"
    if brief and not default.get("deny"):
        return "denied"
    return f'denied ("{denial_message(part)}")'
