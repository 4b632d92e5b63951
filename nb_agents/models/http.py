"""Shared HTTP plumbing of the built-in providers.

`ProviderClient` sends one JSON POST (or one server-sent-event stream) to a
provider and owns everything that is the same for all of them: the timeout,
mapping transport failures and non-2xx answers onto the `ModelError` tree,
and retrying what may succeed later (429, 5xx, 529, connection failures) with
exponential backoff and jitter, honouring ``Retry-After`` (seconds or an HTTP
date) and ``retry-after-ms``. The sleep is injectable so tests never wait.

`env_value` and `read_error` are the small helpers the providers share: the
first variable set among several, and the message and type of an error body.
The providers' common base, `HttpModel`, is in `nb_agents.models._provider`.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import os
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

import httpx

from ..frames import ServerSentEvent, SseParser
from .errors import (
    ModelConnectionError,
    ModelError,
    ModelResponseError,
    ModelTimeoutError,
    error_for_http_status,
)

__all__ = ["ProviderClient", "ServerSentEvent", "Sleep", "env_value", "read_error"]

T = TypeVar("T")
Sleep = Callable[[float], Awaitable[None]]

_log = logging.getLogger("nb_agents.models")


def env_value(*names: str, env: Mapping[str, str] | None = None) -> tuple[str, str] | None:
    """The first non-empty environment variable among `names`, as (name, value)."""
    source = os.environ if env is None else env
    for name in names:
        value = source.get(name, "").strip()
        if value:
            return name, value
    return None


def read_error(body: Any, fallback: str) -> tuple[str, str | None]:
    """The (message, error type) of a provider's error body.

    Understands the three documented envelopes: OpenAI's
    ``{"error": {"message", "type", "code"}}``, Anthropic's
    ``{"type": "error", "error": {"type", "message"}}`` and Google's
    ``{"error": {"code", "message", "status", "details"}}`` (also wrapped in a
    list; an ``ErrorInfo.reason`` such as ``API_KEY_INVALID`` is the type),
    plus ``{"error": "text"}``.
    """
    if isinstance(body, list) and body:
        body = body[0]
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, str):
            return err, None
        if isinstance(err, dict):
            message = err.get("message") or fallback
            kind = err.get("type") or _google_detail(err, "reason") or err.get("status") or err.get("code")
            return str(message), (str(kind) if kind is not None else None)
    return fallback, None


def _google_detail(err: dict[str, Any], key: str) -> Any:
    """A field of the first ``google.rpc`` detail that has it (``reason``, ``retryDelay``)."""
    for detail in err.get("details") or []:
        if isinstance(detail, dict) and detail.get(key):
            return detail[key]
    return None


def _body_retry_delay(body: Any) -> float | None:
    """Google's ``RetryInfo.retryDelay`` (``"37s"``) from an error body, in seconds."""
    if isinstance(body, list) and body:
        body = body[0]
    err = body.get("error") if isinstance(body, dict) else None
    delay = _google_detail(err, "retryDelay") if isinstance(err, dict) else None
    if isinstance(delay, str) and delay.endswith("s"):
        try:
            return max(0.0, float(delay[:-1]))
        except ValueError:
            return None
    return None


def _retry_after(headers: httpx.Headers) -> float | None:
    """Seconds the server asked us to wait, from ``retry-after-ms`` or ``Retry-After``."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class ProviderClient:
    """POSTs to one provider with timeouts, error mapping and retries.

    Args:
        provider: The provider name used in error messages.
        client: An `httpx.AsyncClient` to send with (not closed here). Without
            one, each call opens and closes its own client, which keeps a model
            usable from any event loop (a notebook's and the sync twins').
        timeout: Seconds to wait for the server (connecting: at most 10).
        max_retries: Retries after the first attempt for retryable failures.
        sleep: Awaited with the delay before each retry (``asyncio.sleep``).
        max_backoff: The longest computed backoff, in seconds.
        max_retry_after: A ``Retry-After`` longer than this is not waited for:
            the error is raised instead.

    Example:
        >>> ProviderClient(provider="openai", max_retries=0).max_retries
        0
    """

    def __init__(
        self,
        *,
        provider: str,
        client: httpx.AsyncClient | None = None,
        timeout: float = 120.0,
        max_retries: int = 2,
        sleep: Sleep | None = None,
        initial_backoff: float = 0.5,
        max_backoff: float = 8.0,
        max_retry_after: float = 60.0,
    ) -> None:
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        self.provider = provider
        self.client = client
        self.timeout = httpx.Timeout(timeout, connect=min(timeout, 10.0))
        self.max_retries = max_retries
        self.sleep: Sleep = sleep or asyncio.sleep
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.max_retry_after = max_retry_after

    # -- one attempt --------------------------------------------------------------
    async def post_json(self, url: str, body: Any, headers: Mapping[str, str]) -> Any:
        """One POST, with retries; the decoded JSON answer."""

        async def attempt() -> Any:
            client, own = self._client()
            try:
                response = await client.post(url, json=body, headers=dict(headers), timeout=self.timeout)
                if response.status_code >= 400:
                    raise self._status_error(response)
                return self._json(response)
            except httpx.HTTPError as exc:
                raise self._transport_error(exc) from exc
            finally:
                if own:
                    await client.aclose()

        return await self.retrying(attempt)

    async def stream_events(
        self,
        url: str,
        body: Any,
        headers: Mapping[str, str],
        handle: Callable[[ServerSentEvent], Awaitable[None]],
    ) -> Any:
        """One streamed POST (no retries: see `retrying`); each event goes to `handle`.

        Returns None, or the decoded body if the server answered plain JSON
        instead of an event stream (some servers ignore ``stream: true``).
        """
        client, own = self._client()
        try:
            async with client.stream(
                "POST", url, json=body, headers=dict(headers), timeout=self.timeout
            ) as response:
                if response.status_code >= 400:
                    await response.aread()
                    raise self._status_error(response)
                if "json" in response.headers.get("content-type", ""):
                    await response.aread()
                    return self._json(response)
                parser = SseParser()
                async for line in response.aiter_lines():
                    event = parser.feed(line)
                    if event is not None:
                        await handle(event)
                event = parser.flush()
                if event is not None:
                    await handle(event)
                return None
        except httpx.HTTPError as exc:
            raise self._transport_error(exc) from exc
        finally:
            if own:
                await client.aclose()

    # -- retries --------------------------------------------------------------------
    async def retrying(
        self, attempt: Callable[[], Awaitable[T]], *, may_retry: Callable[[], bool] | None = None
    ) -> T:
        """Run `attempt`, again after a retryable `ModelError` while `may_retry()`.

        A stream passes ``may_retry`` = "nothing was streamed to the caller
        yet": once a chunk went out, a retry would show it twice.
        """
        retries = 0
        while True:
            try:
                return await attempt()
            except ModelError as exc:
                if not _is_retryable(exc) or retries >= self.max_retries:
                    raise
                if may_retry is not None and not may_retry():
                    raise
                delay = self._delay(retries, exc.retry_after)
                if delay is None:
                    raise
                retries += 1
                _log.info(
                    "%s: %s; retry %d/%d in %.2fs", self.provider, exc, retries, self.max_retries, delay
                )
                await self.sleep(delay)

    def _delay(self, retries: int, retry_after: float | None) -> float | None:
        if retry_after is not None:
            return retry_after if retry_after <= self.max_retry_after else None
        backoff = min(self.max_backoff, self.initial_backoff * (2.0**retries))
        return backoff * (0.5 + random.random() / 2)  # jitter: between half and all of it

    # -- helpers ----------------------------------------------------------------------
    def _client(self) -> tuple[httpx.AsyncClient, bool]:
        if self.client is not None:
            return self.client, False
        return httpx.AsyncClient(), True

    def _json(self, response: httpx.Response) -> Any:
        try:
            return response.json()
        except ValueError as exc:
            raise ModelResponseError(
                f"answer is not JSON: {response.text[:200]!r}", provider=self.provider
            ) from exc

    def _status_error(self, response: httpx.Response) -> ModelError:
        fallback = f"HTTP {response.status_code} {response.reason_phrase}".strip()
        try:
            body: Any = response.json()
        except ValueError:
            body = response.text
            fallback = f"{fallback}: {body[:500]}" if body else fallback
        message, kind = read_error(body, fallback)
        err = error_for_http_status(
            response.status_code, message, provider=self.provider, error_type=kind, body=body
        )
        err.retry_after = _retry_after(response.headers)
        if err.retry_after is None:
            err.retry_after = _body_retry_delay(body)
        return err

    def _transport_error(self, exc: httpx.HTTPError) -> ModelError:
        if isinstance(exc, httpx.ConnectTimeout):
            return ModelConnectionError(f"timed out connecting: {exc}", provider=self.provider)
        if isinstance(exc, httpx.TimeoutException):
            seconds = self.timeout.read
            return ModelTimeoutError(
                f"no answer within {seconds:g}s (raise timeout= on the model): {exc}".rstrip(": "),
                provider=self.provider,
            )
        return ModelConnectionError(
            f"could not reach the server: {type(exc).__name__}: {exc}".rstrip(": "), provider=self.provider
        )


def _is_retryable(exc: ModelError) -> bool:
    return exc.retryable or (exc.http_status is not None and exc.http_status >= 500)
