"""Fake models for tests and offline demos (re-exported by `nb_agents.testing`).

`ScriptedModel` plays back a list of responses, one per call, and records
every request; `FunctionModel` answers with a function of the request. Both
speak the same `Model` protocol as the real providers.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from ..errors import FailedPreconditionError
from ..models.base import ModelChunkSink
from ..types import GenerateRequest, GenerateResponse, ModelResponseChunk, Part

__all__ = ["FunctionModel", "ScriptedModel"]

ResponseLike = GenerateResponse | dict[str, Any]
ChunkLike = ModelResponseChunk | dict[str, Any]


def _response(value: ResponseLike) -> GenerateResponse:
    return value if isinstance(value, GenerateResponse) else GenerateResponse.model_validate(value)


def _chunk(value: ChunkLike) -> ModelResponseChunk:
    return value if isinstance(value, ModelResponseChunk) else ModelResponseChunk.model_validate(value)


class ScriptedModel:
    """A model that returns ``responses[i]`` on its i-th call.

    Args:
        responses: Genkit GenerateResponse dicts or objects, in call order.
        stream_chunks: Optional chunks to stream on each call, before the
            response (``stream_chunks[i]`` for call i).
        name: The model name shown in logs and requests.

    Attributes:
        requests: Every `GenerateRequest` received, in order.

    Example:
        >>> model = ScriptedModel([{"message": {"role": "model", "content": [{"text": "hi"}]},
        ...                         "finishReason": "stop"}])
        >>> len(model.responses)
        1
    """

    def __init__(
        self,
        responses: Sequence[ResponseLike] = (),
        *,
        stream_chunks: Sequence[Sequence[ChunkLike]] | None = None,
        name: str = "scripted",
    ) -> None:
        self.name = name
        self.responses = [_response(r) for r in responses]
        self.stream_chunks = [[_chunk(c) for c in call] for call in (stream_chunks or [])]
        self.requests: list[GenerateRequest] = []

    @property
    def calls(self) -> int:
        """How many times the model was called."""
        return len(self.requests)

    def add(self, *responses: ResponseLike, stream_chunks: Sequence[ChunkLike] | None = None) -> None:
        """Append responses to the script (chunks go with the first one added)."""
        if stream_chunks is not None:
            while len(self.stream_chunks) < len(self.responses):
                self.stream_chunks.append([])
            self.stream_chunks.append([_chunk(c) for c in stream_chunks])
        self.responses.extend(_response(r) for r in responses)

    async def generate(
        self, request: GenerateRequest, on_chunk: ModelChunkSink | None = None
    ) -> GenerateResponse:
        i = len(self.requests)
        self.requests.append(request)
        if i >= len(self.responses):
            raise FailedPreconditionError(
                f"ScriptedModel '{self.name}' has no response for call #{i + 1} "
                f"(it was given {len(self.responses)})"
            )
        if on_chunk is not None and i < len(self.stream_chunks):
            for chunk in self.stream_chunks[i]:
                await on_chunk(chunk)
        return self.responses[i]


class FunctionModel:
    """A model that answers with ``fn(request)`` (sync or async).

    `fn` returns a GenerateResponse (dict or object), or a plain string that
    becomes a model text message with finish reason ``stop``. Unlike
    `ScriptedModel` it keeps only ``last_request`` (and a ``calls`` count).

    Args:
        fn: The function of the request (sync or async).
        name: The model name shown in logs and requests.
        stream: Stream the reply's text to a streaming caller, a word per chunk,
            before returning it (as a real model does); a turn that is not
            streamed gets the reply alone.

    Example:
        >>> echo = FunctionModel(lambda req: "you said: " + req.messages[-1].text, stream=True)
    """

    def __init__(
        self,
        fn: Callable[[GenerateRequest], ResponseLike | str | Awaitable[ResponseLike | str]],
        *,
        name: str = "function",
        stream: bool = False,
    ) -> None:
        self.fn = fn
        self.name = name
        self.stream = stream
        self.calls = 0
        self.last_request: GenerateRequest | None = None

    async def generate(
        self, request: GenerateRequest, on_chunk: ModelChunkSink | None = None
    ) -> GenerateResponse:
        # only the last request is kept: long benchmark sessions must not pin every history
        self.calls += 1
        self.last_request = request
        out = self.fn(request)
        if inspect.isawaitable(out):
            out = await out
        if isinstance(out, str):
            out = {"message": {"role": "model", "content": [{"text": out}]}, "finishReason": "stop"}
        response = _response(out)
        if self.stream and on_chunk is not None and response.message is not None:
            for part in response.message.content:
                for word in re.findall(r"\s*\S+\s*|\s+", part.text or ""):
                    await on_chunk(ModelResponseChunk(role="model", content=[Part(text=word)]))
        return response
