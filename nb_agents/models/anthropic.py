"""Anthropic Messages API (``POST {base_url}/messages``), plain and streamed.

Maps Genkit requests onto the Messages API and back: system messages become
the top-level ``system`` field, ``role: model`` is ``assistant``, a tool
request is a ``tool_use`` block (``id`` = our ref, ``input`` the object), a
tool response a ``tool_result`` block (``tool_use_id`` = our ref) in a
``user`` message; ``max_tokens`` is required by the API, so it defaults to
``max_tokens=`` on the model (4096). Extended-thinking blocks come back as
``reasoning`` parts with their ``signature`` in the part metadata and are
sent back as they came, which tool use with thinking requires.

Streaming reads ``message_start``, ``content_block_start`` /
``content_block_delta`` (``text_delta``, ``input_json_delta``,
``thinking_delta``, ``signature_delta``) / ``content_block_stop``,
``message_delta`` (``stop_reason``, output usage), ``message_stop`` and
``error`` events. Stop reasons: ``end_turn``, ``tool_use``, ``stop_sequence``,
``pause_turn`` -> stop; ``max_tokens``, ``model_context_window_exceeded``
-> length; ``refusal`` -> blocked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..types import GenerateRequest, GenerateResponse, Message, Part, ToolRequest
from ._provider import HttpModel, HttpOptions, StreamState
from .base import ModelChunkSink
from .convert import (
    RefCounter,
    add_turn,
    build_response,
    data_url,
    output_text,
    parse_arguments,
    split_config,
    system_text,
    tool_schema,
)
from .errors import ModelConnectionError, ModelResponseError, error_for_http_status
from .http import ServerSentEvent, read_error

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["ANTHROPIC_URL", "API_KEY_ENV", "API_VERSION", "AnthropicModel"]

ANTHROPIC_URL = "https://api.anthropic.com/v1"
API_KEY_ENV = ("ANTHROPIC_API_KEY",)
API_VERSION = "2023-06-01"

_SETTINGS = {
    name: name for name in ("temperature", "top_p", "top_k", "stop_sequences")
}  # Genkit's, snake_case
_FINISH = {
    "end_turn": "stop",
    "tool_use": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "blocked",
}
# the HTTP status each documented error type is sent with (for errors inside a stream)
_ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}


class AnthropicModel(HttpModel):
    """A Claude model through the Anthropic Messages API.

    Args:
        name: The model id (``"claude-haiku-4-5"``).
        base_url: The API root; default Anthropic's ``/v1``.
        api_key: The key; default ``ANTHROPIC_API_KEY`` (read on the first call).
        client: An `httpx.AsyncClient` to send with (tests pass a MockTransport).
        max_tokens: ``max_tokens`` when the config sets no ``maxOutputTokens``.
        timeout, max_retries, config, headers, sleep: As for `OpenAICompatModel`.
            Config keys other than the common ones are request fields
            (``thinking``, ``metadata``, ``tool_choice``, ...).

    Example:
        >>> AnthropicModel("claude-haiku-4-5").name
        'anthropic/claude-haiku-4-5'
    """

    provider = "anthropic"
    default_base_url = ANTHROPIC_URL
    key_env = API_KEY_ENV

    def __init__(self, name: str, *, max_tokens: int = 4096, **options: Unpack[HttpOptions]) -> None:
        super().__init__(name, **options)
        self.max_tokens = max_tokens

    def endpoint(self, request: GenerateRequest, *, stream: bool) -> str:
        return f"{self.base_url}/messages"

    def request_headers(self, key: str | None) -> dict[str, str]:
        return {
            "Content-Type": "application/json",
            "x-api-key": key or "",
            "anthropic-version": API_VERSION,
            **self.headers,
        }

    def stream_state(self) -> _StreamState:
        return _StreamState(self.provider)

    def request_body(self, request: GenerateRequest, *, stream: bool) -> dict[str, Any]:
        """The JSON body for `request` (public so tests can assert it)."""
        cfg = split_config(self.config, request.config)
        body: dict[str, Any] = {
            "model": cfg.version or self.model,
            "max_tokens": cfg.max_output_tokens or self.max_tokens,
            "messages": to_messages(request.messages),
        }
        system = system_text(request.messages)
        if system:
            body["system"] = system
        if request.tools:
            body["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": tool_schema(t.input_schema)}
                for t in request.tools
            ]
            choice = {"auto": "auto", "required": "any", "none": "none"}.get(request.tool_choice or "")
            if choice:
                body["tool_choice"] = {"type": choice}
        body.update(cfg.settings(_SETTINGS))
        body.update(cfg.passed("model", "messages", "stream"))
        if stream:
            body["stream"] = True
        return body


def to_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """Genkit messages (system ones excluded) as Messages API messages."""
    out: list[dict[str, Any]] = []
    for msg in messages:
        if msg.role == "system":
            continue
        refs = RefCounter()
        blocks: list[dict[str, Any]] = []
        for p in msg.content:
            block = _block(p, msg.role, refs)
            if block is not None:
                blocks.append(block)
        add_turn(out, "assistant" if msg.role == "model" else "user", "content", blocks)
    return out


def _block(p: Part, role: str, refs: RefCounter) -> dict[str, Any] | None:
    meta = p.metadata or {}
    if p.tool_request is not None and role == "model":
        tr = p.tool_request
        inp = tr.input if isinstance(tr.input, dict) else ({} if tr.input is None else {"input": tr.input})
        return {"type": "tool_use", "id": refs.ref(tr.name, tr.ref), "name": tr.name, "input": inp}
    if p.tool_response is not None:
        res = p.tool_response
        return {
            "type": "tool_result",
            "tool_use_id": refs.ref(res.name, res.ref),
            "content": output_text(res.output),
        }
    if p.reasoning is not None and role == "model":
        if not meta.get("signature"):
            return None  # unsigned thinking (e.g. from another model) cannot be sent back
        return {"type": "thinking", "thinking": p.reasoning, "signature": meta["signature"]}
    if p.custom and "redactedThinking" in p.custom and role == "model":
        return {"type": "redacted_thinking", "data": p.custom["redactedThinking"]}
    if p.text:  # the API rejects empty text blocks
        return {"type": "text", "text": p.text}
    if p.media is not None and role == "user":
        inline = data_url(p.media.url)
        if inline is not None:
            source = {"type": "base64", "media_type": p.media.content_type or inline[0], "data": inline[1]}
        else:
            source = {"type": "url", "url": p.media.url}
        kind = "document" if (p.media.content_type or (inline or ("",))[0]) == "application/pdf" else "image"
        return {"type": kind, "source": source}
    return None


def _part(block: dict[str, Any]) -> Part | None:
    kind = block.get("type")
    if kind == "text":
        return Part(text=block.get("text", ""))
    if kind == "tool_use":
        inp = block.get("input")
        return Part(
            tool_request=ToolRequest(
                name=block.get("name", ""), ref=block.get("id"), input={} if inp is None else inp
            )
        )
    if kind == "thinking":
        sig = block.get("signature")
        return Part(reasoning=block.get("thinking", ""), metadata={"signature": sig} if sig else None)
    if kind == "redacted_thinking":
        return Part(custom={"redactedThinking": block.get("data")})
    return None


def _usage(*sources: Any) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for src in sources:
        if isinstance(src, dict):
            merged.update({k: v for k, v in src.items() if v})
    cached = merged.get("cache_read_input_tokens")
    inp, outp = merged.get("input_tokens"), merged.get("output_tokens")
    return {
        "inputTokens": inp,
        "outputTokens": outp,
        "totalTokens": (inp or 0) + (outp or 0) if inp is not None or outp is not None else None,
        "cachedContentTokens": cached,
    }


def _finish(reason: str | None) -> str:
    return "unknown" if not reason else _FINISH.get(reason, "other")


def _stream_error(data: dict[str, Any], provider: str) -> Exception:
    message, kind = read_error(data, "error in stream")
    status = _ERROR_STATUS.get(kind or "", 500)
    return error_for_http_status(status, message, provider=provider, error_type=kind, body=data)


def parse_message(data: Any, provider: str) -> GenerateResponse:
    """A Messages API ``message`` object as a Genkit response."""
    if isinstance(data, dict) and data.get("type") == "error":
        raise _stream_error(data, provider)
    if not isinstance(data, dict) or not isinstance(data.get("content"), list):
        raise ModelResponseError(f"answer has no content: {str(data)[:200]}", provider=provider)
    parts = [p for p in (_part(b) for b in data["content"]) if p is not None and p.text != ""]
    return build_response(parts, _finish(data.get("stop_reason")), usage=_usage(data.get("usage")))


class _StreamState(StreamState):
    """Assembles Messages streaming events into one response."""

    def reset(self) -> None:
        self.blocks: dict[int, dict[str, Any]] = {}
        self.json: dict[int, list[str]] = {}
        self.done: dict[int, Part] = {}
        self.stop_reason: str | None = None
        self.usage_start: Any = None
        self.usage_delta: Any = None

    async def feed(self, event: ServerSentEvent, sink: ModelChunkSink) -> None:
        data = self.event_json(event)
        if not isinstance(data, dict):
            return
        kind = data.get("type")
        index = data.get("index", 0)
        if kind == "error":
            raise _stream_error(data, self.provider)
        if kind == "message_start":
            self.usage_start = (data.get("message") or {}).get("usage")
        elif kind == "content_block_start":
            self.blocks[index] = dict(data.get("content_block") or {})
            self.json[index] = []
        elif kind == "content_block_delta":
            await self._delta(index, data.get("delta") or {}, sink)
        elif kind == "content_block_stop":
            await self._stop(index, sink)
        elif kind == "message_delta":
            self.stop_reason = (data.get("delta") or {}).get("stop_reason") or self.stop_reason
            self.usage_delta = data.get("usage")

    async def _delta(self, index: int, delta: dict[str, Any], sink: ModelChunkSink) -> None:
        block = self.blocks.setdefault(index, {"type": "text", "text": ""})
        kind = delta.get("type")
        if kind == "text_delta":
            block["text"] = block.get("text", "") + delta.get("text", "")
            await self.emit(sink, Part(text=delta.get("text", "")))
        elif kind == "input_json_delta":
            self.json.setdefault(index, []).append(delta.get("partial_json", ""))
        elif kind == "thinking_delta":
            block["thinking"] = block.get("thinking", "") + delta.get("thinking", "")
            await self.emit(sink, Part(reasoning=delta.get("thinking", "")))
        elif kind == "signature_delta":
            block["signature"] = block.get("signature", "") + delta.get("signature", "")

    async def _stop(self, index: int, sink: ModelChunkSink) -> None:
        block = self.blocks.get(index)
        if block is None:
            return
        if block.get("type") == "tool_use":
            raw = "".join(self.json.get(index, []))
            block["input"] = parse_arguments(raw) if raw else (block.get("input") or {})
        part = _part(block)
        if part is not None:
            self.done[index] = part
            if part.tool_request is not None:
                await self.emit(sink, part)

    async def answer(self, data: Any, sink: ModelChunkSink) -> GenerateResponse:
        return parse_message(data, self.provider)

    async def finish(self, sink: ModelChunkSink) -> GenerateResponse:
        if self.stop_reason is None and not self.done:
            raise ModelConnectionError("the stream ended before the message did", provider=self.provider)
        parts = [self.done[i] for i in sorted(self.done) if self.done[i].text != ""]
        return build_response(
            parts, _finish(self.stop_reason), usage=_usage(self.usage_start, self.usage_delta)
        )
