"""The template of the built-in providers: `HttpModel` and `StreamState`.

`HttpModel` owns what the three providers (`openai_compat`, `gemini`,
`anthropic`) share: the constructor keywords and their handling (the
``provider/model`` name, the per-model default config, the injected
`httpx.AsyncClient`, timeout and retries, and the API key, looked up on first
use so that defining an agent never needs one and a missing one fails the
turn, naming the variable) and the one `generate` skeleton: build the request,
POST it, and either parse the whole answer or feed a stream into a
`StreamState`, retrying while nothing has reached the caller yet.

A provider supplies only what differs, as hooks:

- class attributes: `provider`, `default_base_url`, `key_env`, `key_required`,
  `model_prefix`;
- `endpoint` (the URL), `request_headers` (auth), `request_body` (streaming or
  not) and `stream_state` (a new `StreamState`, which assembles streamed text
  and tool-call fragments into the final response and emits the
  `ModelResponseChunk` values, and reads a whole answer).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, TypedDict

import httpx

from ..frames import FrameError
from ..types import GenerateRequest, GenerateResponse, ModelResponseChunk, Part
from .base import ModelChunkSink
from .errors import MissingApiKeyError, ModelResponseError
from .http import ProviderClient, ServerSentEvent, Sleep, env_value

__all__ = ["HttpModel", "HttpOptions", "StreamState"]


class HttpOptions(TypedDict, total=False):
    """The keywords every built-in provider takes; see `HttpModel` for each."""

    base_url: str | None
    api_key: str | None
    client: httpx.AsyncClient | None
    timeout: float
    max_retries: int
    config: Mapping[str, Any] | None
    headers: Mapping[str, str] | None
    sleep: Sleep | None


class StreamState(ABC):
    """What one streamed answer has delivered so far, per provider.

    One object serves a whole `HttpModel.generate` call: `reset` runs before
    every attempt, while `emitted` survives them, because once a chunk reached
    the caller a retry would show it twice.
    """

    def __init__(self, provider: str) -> None:
        self.provider = provider
        self.emitted = False
        self.reset()

    @abstractmethod
    def reset(self) -> None:
        """Forget what an earlier attempt assembled."""

    def event_json(self, event: ServerSentEvent) -> Any:
        """An event's data as JSON; a `ModelResponseError` naming the provider if it is not JSON."""
        try:
            return event.json()
        except FrameError as exc:
            raise ModelResponseError(
                f"unreadable stream event {event.data[:200]!r}",
                provider=self.provider,
                details={"data": event.data},
            ) from exc

    @abstractmethod
    async def feed(self, event: ServerSentEvent, sink: ModelChunkSink) -> None:
        """Take one event; emit what the caller may see of it now."""

    @abstractmethod
    async def finish(self, sink: ModelChunkSink) -> GenerateResponse:
        """The response, once the stream has ended."""

    @abstractmethod
    async def answer(self, data: Any, sink: ModelChunkSink) -> GenerateResponse:
        """The response from a whole JSON answer: to a request not streamed, or to a
        streamed one whose server ignored ``stream: true`` (see `ProviderClient.stream_events`).
        """

    async def emit(self, sink: ModelChunkSink, *parts: Part) -> None:
        """Send `parts` to the caller as one chunk."""
        self.emitted = True
        await sink(ModelResponseChunk(role="model", content=list(parts)))


class HttpModel(ABC):
    """The base of the built-in providers: name, key lookup, defaults, HTTP, `generate`.

    Args:
        name: The provider's model id (``"gpt-4o-mini"``); `model_prefix` is dropped.
        base_url: The API root; default `default_base_url`.
        api_key: The key; ``None`` looks in `key_env` on first use.
        client: An `httpx.AsyncClient` to send with (tests pass a MockTransport).
        timeout: Seconds to wait for the server.
        max_retries: Retries for 429, 5xx and connection failures.
        config: Default generation config (the request's wins per key).
        headers: Extra HTTP headers sent with every request.
        sleep: Awaited before each retry (tests inject a recorder).
    """

    provider: str
    """The registry prefix; the model's `name` is ``provider/model``."""
    default_base_url: str
    key_env: tuple[str, ...] = ()
    """Environment variables to look in for the key, in order."""
    key_required: bool = True
    """Whether a missing key is an error (not for local servers)."""
    model_prefix: str = ""
    """A prefix model ids may carry that is not part of the id (Gemini's ``models/``)."""

    def __init__(
        self,
        name: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        client: httpx.AsyncClient | None = None,
        timeout: float = 120.0,
        max_retries: int = 2,
        config: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        sleep: Sleep | None = None,
    ) -> None:
        model = name.removeprefix(self.model_prefix) if self.model_prefix else name
        if not model or not isinstance(model, str):
            raise ValueError(f"{self.provider}: a model name is required, got {model!r}")
        self.model = model
        self.name = f"{self.provider}/{model}"
        self.base_url = (base_url or self.default_base_url).rstrip("/")
        self.config: dict[str, Any] = dict(config or {})
        self.headers: dict[str, str] = dict(headers or {})
        self.explicit_api_key = api_key
        self.http = ProviderClient(
            provider=self.provider, client=client, timeout=timeout, max_retries=max_retries, sleep=sleep
        )

    def api_key(self) -> str | None:
        """The key to send: explicit, else from the environment (read now).

        Raises:
            MissingApiKeyError: No key anywhere and this provider needs one.
        """
        if self.explicit_api_key:
            return self.explicit_api_key
        found = env_value(*self.key_env)
        if found is not None:
            return found[1]
        if self.key_required:
            names = " or ".join(self.key_env)
            raise MissingApiKeyError(
                f"no API key for model '{self.name}': set the {names} environment variable "
                "(or pass api_key= to the model)",
                provider=self.provider,
                details={"env": list(self.key_env)},
            )
        return None

    async def generate(
        self, request: GenerateRequest, on_chunk: ModelChunkSink | None = None
    ) -> GenerateResponse:
        """Send `request`; stream text and tool calls to `on_chunk` if given."""
        headers = self.request_headers(self.api_key())
        stream = on_chunk is not None
        url = self.endpoint(request, stream=stream)
        body = self.request_body(request, stream=stream)
        state = self.stream_state()
        if on_chunk is None:
            return await state.answer(await self.http.post_json(url, body, headers), _nobody)
        sink = on_chunk

        async def handle(event: ServerSentEvent) -> None:
            await state.feed(event, sink)

        async def attempt() -> GenerateResponse:
            state.reset()
            whole = await self.http.stream_events(url, body, headers, handle)
            if whole is not None:
                return await state.answer(whole, sink)
            return await state.finish(sink)

        return await self.http.retrying(attempt, may_retry=lambda: not state.emitted)

    # -- the hooks ------------------------------------------------------------------------
    @abstractmethod
    def endpoint(self, request: GenerateRequest, *, stream: bool) -> str:
        """The URL to POST `request` to."""

    @abstractmethod
    def request_headers(self, key: str | None) -> dict[str, str]:
        """The HTTP headers (auth and `headers`) for a request sent with `key`."""

    @abstractmethod
    def request_body(self, request: GenerateRequest, *, stream: bool) -> dict[str, Any]:
        """The JSON body for `request` (public so tests can assert it)."""

    @abstractmethod
    def stream_state(self) -> StreamState:
        """A fresh `StreamState` for one `generate` call (it reads a whole answer too)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model!r}, base_url={self.base_url!r})"


async def _nobody(chunk: ModelResponseChunk) -> None:
    """The sink of a call that is not streamed: nobody listens."""
