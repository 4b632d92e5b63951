"""Who is calling: request context providers, as Genkit's, and the built-in `api_key`.

A context provider is a function of the Starlette request that returns the
request context (``{"auth": {"uid": "ana"}, ...}``), sync or async, or raises
`UnauthenticatedError` (401) or `PermissionDeniedError` (403). `create_app`
calls it before reading the body of every POST; the context reaches tools
(``ToolContext.context``), handlers (``TurnContext.context``) and the session
ownership rules (``context["auth"]["uid"]`` owns the sessions it creates).

`api_key` follows Genkit's ``apiKey()``: the key is the ``Authorization``
header's value (``Bearer <key>`` works too), a missing one is
``UNAUTHENTICATED: Unauthenticated`` and a wrong one ``PERMISSION_DENIED:
Permission Denied``. Keys are compared in constant time, and the key itself
never enters the context.
"""

from __future__ import annotations

import hmac
import inspect
import os
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from starlette.requests import Request

from ..errors import PermissionDeniedError, UnauthenticatedError

__all__ = ["ContextProvider", "api_key", "resolve_context"]

ContextProvider = Callable[[Request], "dict[str, Any] | Awaitable[dict[str, Any]]"]


def _parse_env(value: str, var: str) -> dict[str, str]:
    """``KEY`` (one key) or ``uid=KEY,uid2=KEY2`` (a key per principal)."""
    value = value.strip()
    if not value:
        raise ValueError(f"the environment variable {var} is empty; set it to an API key")
    if "=" not in value:
        return {"api-key": value}
    keys: dict[str, str] = {}
    for item in value.split(","):
        uid, sep, key = item.strip().partition("=")
        if not sep or not uid or not key:
            raise ValueError(f"{var} must be KEY or uid=KEY,uid=KEY; {item.strip()!r} is neither")
        keys[uid] = key
    return keys


def api_key(
    keys: str | Mapping[str, str] | None = None, *, env: str | None = None, uid: str = "api-key"
) -> ContextProvider:
    """A context provider that admits requests carrying one of `keys`.

    Args:
        keys: One key (its callers are the principal `uid`), or ``{uid: key}``
            for a key per principal.
        env: Read the keys from this environment variable instead (now, so a
            missing variable fails at start-up): ``KEY`` or ``ana=K1,bob=K2``.
        uid: The principal of a single key.

    Example:
        >>> provider = api_key({"ana": "s3cret-a", "bob": "s3cret-b"})
    """
    if (keys is None) == (env is None):
        raise ValueError("api_key() takes keys or env=, exactly one of them")
    if env is not None:
        raw = os.environ.get(env)
        if raw is None:
            raise ValueError(f"the environment variable {env} is not set; set it to an API key")
        table = _parse_env(raw, env)
    elif isinstance(keys, str):
        table = {uid: keys}
    else:
        assert keys is not None
        table = dict(keys)
    if not table or any(not isinstance(k, str) or not k for k in table.values()):
        raise ValueError("api_key() needs at least one non-empty key")
    known = [(name, key.encode()) for name, key in table.items()]

    def provide(request: Request) -> dict[str, Any]:
        given = request.headers.get("authorization", "").strip()
        if given.lower().startswith("bearer "):
            given = given[7:].strip()
        if not given:
            raise UnauthenticatedError("Unauthenticated")
        found = None
        for name, key in known:  # every key compared, in constant time: no timing hint
            if hmac.compare_digest(given.encode(), key):
                found = name
        if found is None:
            raise PermissionDeniedError("Permission Denied")
        return {"auth": {"uid": found, "method": "api_key"}}

    return provide


async def resolve_context(provider: ContextProvider | None, request: Request) -> dict[str, Any]:
    """The request context: the provider's answer ({} without a provider)."""
    if provider is None:
        return {}
    value = provider(request)
    if inspect.isawaitable(value):
        value = await value
    if not isinstance(value, dict):
        raise TypeError(f"a context provider must return a dict, got {type(value).__name__}")
    return value
