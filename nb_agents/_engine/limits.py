"""What a call may carry: refused before any store access or tool, so a final write never fails on it.

Every value an invocation stores comes from its input and init. A value that
would pass validation and then fail where it is written (a JSON encoder's depth,
a UTF-8 encoder, a database index) is refused up front with ``INVALID_ARGUMENT``
naming the limit:

* anywhere (a message, a tool input, a resume answer, a state blob), a value
  that is not JSON every store keeps (`nb_agents._json.check_value`): a number
  that is not finite, JSON nested deeper than `MAX_JSON_DEPTH` levels, a lone
  surrogate or a NUL character;
* an id (snapshot or session) longer than `MAX_ID_LENGTH` characters, or holding
  a control character, a surrogate or nothing at all.
"""

from __future__ import annotations

import os
import re

from .._json import MAX_JSON_DEPTH, check_value
from ..errors import InvalidArgumentError
from ..types import AgentInit, AgentInput

__all__ = [
    "MAX_ID_LENGTH", "MAX_JSON_DEPTH", "check_id", "check_init_ids", "check_input", "check_json", "new_id",
]  # fmt: skip

MAX_ID_LENGTH = 256
"""The longest snapshot or session id, in characters."""

_BAD_ID = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


def new_id() -> str:
    """A new random id: ``str(uuid.uuid4())``, spelled out (a 16-byte random UUID, version 4,
    RFC 9562's variant, as lowercase hex in 8-4-4-4-12), at two fifths of its cost: a turn makes one.

    Example:
        >>> import uuid
        >>> uuid.UUID(new_id()).version
        4
    """
    raw = bytearray(os.urandom(16))
    raw[6] = raw[6] & 0x0F | 0x40
    raw[8] = raw[8] & 0x3F | 0x80
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def check_id(value: str | None, what: str) -> None:
    """Refuse an id that no store can index or encode."""
    if value is None:
        return
    if not isinstance(value, str) or not value:
        raise InvalidArgumentError(f"{what} must be a non-empty string")
    if len(value) > MAX_ID_LENGTH:
        raise InvalidArgumentError(
            f"{what} is {len(value)} characters long; ids are at most {MAX_ID_LENGTH} characters"
        )
    found = _BAD_ID.search(value)
    if found is not None:
        raise InvalidArgumentError(
            f"{what} holds the character U+{ord(found.group()):04X} at position {found.start()}; "
            "ids may not hold control characters or lone surrogates"
        )


check_json = check_value
"""Refuse a value that is not JSON every store keeps (`nb_agents._json.check_value`)."""


def check_init_ids(init: AgentInit) -> None:
    """Refuse an init whose ids a store could not index or encode (`check_id` names what is wrong)."""
    state_id = init.state.session_id if init.state is not None else None
    for value, what in (
        (init.snapshot_id, "init.snapshotId"),
        (init.session_id, "init.sessionId"),
        (state_id, "init.state.sessionId"),
    ):
        if value is not None and (
            not isinstance(value, str) or not value or len(value) > MAX_ID_LENGTH or _BAD_ID.search(value)
        ):
            check_id(value, what)


def check_input(inp: AgentInput) -> None:
    """Refuse an input a store could not write (see the module docstring)."""
    check_value(inp, "data")
