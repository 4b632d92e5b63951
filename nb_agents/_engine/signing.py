"""Signed client-managed state: an HMAC over the state blob.

With client-managed state the whole conversation (tool results included)
travels through the client. A `StateSigner` adds ``signature`` to every state
it hands out and refuses one that is unsigned or was changed, so a client
cannot forge history or tool results. It does not stop replay of an older,
genuine state: that is what server-managed state (a store) is for.
"""

from __future__ import annotations

import hashlib
import hmac

from .._json import canonical, canonical_typed
from ..errors import PermissionDeniedError
from ..types import SessionState

__all__ = ["StateSigner"]


class StateSigner:
    """Sign and check state blobs with one secret (HMAC-SHA256 over canonical JSON)."""

    def __init__(self, secret: str | bytes) -> None:
        self._secret = secret.encode() if isinstance(secret, str) else secret

    def _signature(self, state: SessionState, *, typed: bool = False) -> str:
        body = state.to_wire()
        body.pop("signature", None)
        text = (canonical_typed if typed else canonical)(body)
        return hmac.new(self._secret, text.encode(), hashlib.sha256).hexdigest()

    def sign(self, state: SessionState) -> SessionState:
        """`state` with its ``signature`` field set."""
        return state.model_copy(update={"signature": self._signature(state)})

    def verify(self, state: SessionState, agent_name: str) -> SessionState:
        """`state` if its signature checks out, else PERMISSION_DENIED."""
        given = getattr(state, "signature", None)
        # a state signed before numbers compared by value was signed over 500.0 as written;
        # it still checks out when it comes back as it went out
        if not isinstance(given, str) or not (
            hmac.compare_digest(given, self._signature(state))
            or hmac.compare_digest(given, self._signature(state, typed=True))
        ):
            raise PermissionDeniedError(
                f"The state sent to agent '{agent_name}' is unsigned or was modified; "
                "send back the state exactly as the last output returned it."
            )
        return state
