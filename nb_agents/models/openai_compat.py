"""OpenAI-compatible chat completions: OpenAI, Ollama, vLLM, llama.cpp, LM Studio.

Maps Genkit requests onto ``POST {base_url}/chat/completions`` and back:
``role: model`` is ``assistant``; a tool request is a ``tool_calls`` entry
whose ``id`` is our ``ref`` and whose ``function.arguments`` is the input as
JSON text; a tool response is a ``role: tool`` message with ``tool_call_id``
= our ref. Streaming reads ``chat.completion.chunk`` events: text deltas go
out as they come; tool-call fragments are keyed by ``index`` (a new ``id`` at
a used index opens a new call, as Ollama sends parallel calls) and assembled
into toolRequest parts at the end. Finish reasons: ``stop``/``tool_calls`` ->
stop, ``length`` -> length, ``content_filter`` -> blocked.

Keys and URLs: provider ``openai`` reads ``OPENAI_API_KEY`` and
``OPENAI_BASE_URL``; a key is required only against OpenAI's own URL.
Provider ``ollama`` talks to ``http://127.0.0.1:11434/v1`` (``OLLAMA_HOST``
if set) without a key. Any other provider name needs ``base_url=``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..types import GenerateRequest, GenerateResponse, Message, Part, ToolRequest
from ._provider import HttpModel, HttpOptions, StreamState
from .base import ModelChunkSink
from .convert import (
    GenerationConfig,
    RefCounter,
    arguments_text,
    build_response,
    mint_ref,
    output_text,
    parse_arguments,
    split_config,
    tool_schema,
)
from .errors import ModelConnectionError, ModelResponseError, error_for_http_status
from .http import ServerSentEvent, env_value, read_error

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["OLLAMA_URL", "OPENAI_URL", "OpenAICompatModel", "ollama_model", "openai_model"]

OPENAI_URL = "https://api.openai.com/v1"
OLLAMA_URL = "http://127.0.0.1:11434/v1"

_FINISH = {"stop": "stop", "tool_calls": "stop", "function_call": "stop", "length": "length"}
_FINISH_BLOCKED = {"content_filter"}


def _default_url(provider: str) -> str:
    """The API root when ``base_url=`` is not given (read from the environment now)."""
    if provider == "openai":
        found = env_value("OPENAI_BASE_URL")
        return found[1] if found else OPENAI_URL
    if provider == "ollama":
        return _ollama_url()
    raise ValueError(f"OpenAICompatModel(provider={provider!r}) needs base_url=")


def _ollama_url() -> str:
    host = os.environ.get("OLLAMA_HOST", "").strip()
    if not host:
        return OLLAMA_URL
    if "://" not in host:
        host = f"http://{host}"
    return f"{host.rstrip('/')}/v1"


class OpenAICompatModel(HttpModel):
    """A model behind an OpenAI-compatible ``/chat/completions`` endpoint.

    Args:
        name: The model id the server knows (``"gpt-4o-mini"``, ``"llama3.2"``).
        base_url: The API root (``.../v1``). Default: ``OPENAI_BASE_URL`` or
            OpenAI's for provider ``openai``; the local Ollama URL for ``ollama``.
        api_key: The key; default ``OPENAI_API_KEY`` (read on first use).
        client: An `httpx.AsyncClient` to send with (tests pass a MockTransport).
        provider: The name prefix (``openai``, ``ollama``, ``vllm``, ...).
        timeout: Seconds to wait for the server.
        max_retries: Retries for 429, 5xx and connection failures.
        config: Default generation config (the request's wins per key).
        headers: Extra headers (``OpenAI-Organization``, ...).
        max_tokens_field: The body field for ``maxOutputTokens``; OpenAI
            wants ``max_completion_tokens``, most local servers ``max_tokens``.
        stream_usage: Ask for token usage on streams (``stream_options``).
        sleep: Awaited before each retry (tests inject a recorder).

    Example:
        >>> m = OpenAICompatModel("llama3.2", provider="ollama")
        >>> (m.name, m.base_url)
        ('ollama/llama3.2', 'http://127.0.0.1:11434/v1')
    """

    default_base_url = OPENAI_URL

    def __init__(
        self,
        name: str,
        *,
        provider: str = "openai",
        max_tokens_field: str | None = None,
        stream_usage: bool = True,
        **options: Unpack[HttpOptions],
    ) -> None:
        self.provider = provider
        options["base_url"] = options.get("base_url") or _default_url(provider)
        super().__init__(name, **options)
        if provider == "openai":
            self.key_env = ("OPENAI_API_KEY",)
        # a key is optional against a local or self-hosted server
        self.key_required = provider == "openai" and self.base_url == OPENAI_URL
        default_field = "max_completion_tokens" if self.base_url == OPENAI_URL else "max_tokens"
        self.max_tokens_field = max_tokens_field or default_field
        self.stream_usage = stream_usage

    def endpoint(self, request: GenerateRequest, *, stream: bool) -> str:
        return f"{self.base_url}/chat/completions"

    def request_headers(self, key: str | None) -> dict[str, str]:
        headers = {"Content-Type": "application/json", **self.headers}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def stream_state(self) -> _StreamState:
        return _StreamState(self.provider)

    def request_body(self, request: GenerateRequest, *, stream: bool) -> dict[str, Any]:
        """The JSON body for `request` (public so tests can assert it)."""
        cfg = split_config(self.config, request.config)
        body: dict[str, Any] = {"model": cfg.version or self.model, "messages": to_messages(request.messages)}
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": tool_schema(t.input_schema),
                    },
                }
                for t in request.tools
            ]
            if request.tool_choice in ("auto", "none", "required"):
                body["tool_choice"] = request.tool_choice
        self._apply_config(body, cfg)
        if stream:
            body["stream"] = True
            if self.stream_usage:
                body["stream_options"] = {"include_usage": True}
        return body

    def _apply_config(self, body: dict[str, Any], cfg: GenerationConfig) -> None:
        body.update(
            cfg.settings(
                {"temperature": "temperature", "top_p": "top_p", "max_output_tokens": self.max_tokens_field}
            )
        )
        if cfg.stop_sequences:
            body["stop"] = cfg.stop_sequences
        # topK has no chat-completions field; pass "top_k" explicitly to servers that take it
        body.update(cfg.passed("model", "messages", "stream"))


def to_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """Genkit messages as chat-completions messages."""
    out: list[dict[str, Any]] = []
    for msg in messages:
        if msg.role == "system":
            out.append({"role": "system", "content": msg.text})
        elif msg.role == "user":
            out.append({"role": "user", "content": _user_content(msg.content)})
        elif msg.role == "model":
            out.append(_assistant(msg))
        else:
            refs = RefCounter()
            for part in msg.content:
                if part.tool_response is not None:
                    tr = part.tool_response
                    out.append(
                        {
                            "role": "tool",
                            "tool_call_id": refs.ref(tr.name, tr.ref),
                            "content": output_text(tr.output),
                        }
                    )
    return out


def _user_content(parts: list[Part]) -> str | list[dict[str, Any]]:
    if all(p.media is None for p in parts):
        return "".join(p.text for p in parts if p.text is not None)
    content: list[dict[str, Any]] = []
    for p in parts:
        if p.text is not None:
            content.append({"type": "text", "text": p.text})
        elif p.media is not None:
            content.append({"type": "image_url", "image_url": {"url": p.media.url}})
    return content


def _assistant(msg: Message) -> dict[str, Any]:
    text = "".join(p.text for p in msg.content if p.text is not None)
    out: dict[str, Any] = {"role": "assistant", "content": text or None}
    refs = RefCounter()
    calls = [
        {
            "id": refs.ref(p.tool_request.name, p.tool_request.ref),
            "type": "function",
            "function": {"name": p.tool_request.name, "arguments": arguments_text(p.tool_request.input)},
        }
        for p in msg.content
        if p.tool_request is not None
    ]
    if calls:
        out["tool_calls"] = calls
    elif out["content"] is None:
        out["content"] = ""
    return out


def _finish(reason: str | None) -> str:
    if reason is None:
        return "unknown"
    if reason in _FINISH_BLOCKED:
        return "blocked"
    return _FINISH.get(reason, "other")


def _usage(raw: Any) -> dict[str, Any] | None:
    if not isinstance(raw, dict):
        return None
    details = raw.get("completion_tokens_details") or {}
    cached = raw.get("prompt_tokens_details") or {}
    return {
        "inputTokens": raw.get("prompt_tokens"),
        "outputTokens": raw.get("completion_tokens"),
        "totalTokens": raw.get("total_tokens"),
        "thoughtsTokens": details.get("reasoning_tokens") or None,
        "cachedContentTokens": cached.get("cached_tokens") or None,
    }


def _call_part(call_id: str | None, name: str, arguments: str | None) -> Part:
    # some OpenAI-compatible servers (llama.cpp, older Ollama) send calls without an id
    ref = call_id or mint_ref(name)
    return Part(tool_request=ToolRequest(name=name, ref=ref, input=parse_arguments(arguments)))


def parse_completion(data: Any, provider: str) -> GenerateResponse:
    """A ``chat.completion`` object as a Genkit response."""
    if isinstance(data, dict) and data.get("error") is not None:
        message, kind = read_error(data, "error in answer")
        raise error_for_http_status(500, message, provider=provider, error_type=kind, body=data)
    if not isinstance(data, dict) or not data.get("choices"):
        raise ModelResponseError(f"answer has no choices: {str(data)[:200]}", provider=provider)
    choice = data["choices"][0]
    msg = choice.get("message") or {}
    parts: list[Part] = []
    reasoning = msg.get("reasoning_content") or msg.get("reasoning")
    if isinstance(reasoning, str) and reasoning:
        parts.append(Part(reasoning=reasoning))
    if msg.get("content"):
        parts.append(Part(text=msg["content"]))
    for call in msg.get("tool_calls") or []:
        fn = call.get("function") or {}
        parts.append(_call_part(call.get("id"), fn.get("name", ""), fn.get("arguments")))
    finish = _finish(choice.get("finish_reason"))
    refusal = msg.get("refusal")
    if refusal:
        finish = "blocked"
    return build_response(parts, finish, usage=_usage(data.get("usage")), finish_message=refusal)


@dataclass
class _Call:
    id: str | None
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class _StreamState(StreamState):
    """Assembles ``chat.completion.chunk`` events into one response."""

    def reset(self) -> None:
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.calls: list[_Call] = []
        self.slots: dict[int, int] = {}  # the server's index -> position in self.calls
        self.finish_reason: str | None = None
        self.usage: dict[str, Any] | None = None
        self.seen = 0

    async def feed(self, event: ServerSentEvent, sink: ModelChunkSink) -> None:
        if event.data.strip() == "[DONE]":
            return
        data = self.event_json(event)
        self.seen += 1
        if isinstance(data, dict) and data.get("error") is not None:
            message, kind = read_error(data, "error in stream")
            raise error_for_http_status(500, message, provider=self.provider, error_type=kind, body=data)
        if not isinstance(data, dict):
            return
        if data.get("usage"):
            self.usage = _usage(data["usage"])
        for choice in data.get("choices") or []:
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if isinstance(reasoning, str) and reasoning:
                self.reasoning.append(reasoning)
                await self.emit(sink, Part(reasoning=reasoning))
            if delta.get("content"):
                self.text.append(delta["content"])
                await self.emit(sink, Part(text=delta["content"]))
            for frag in delta.get("tool_calls") or []:
                self._add_fragment(frag)
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]

    def _add_fragment(self, frag: dict[str, Any]) -> None:
        index = frag.get("index", len(self.slots))
        frag_id = frag.get("id")
        pos = self.slots.get(index)
        if pos is None or (frag_id and self.calls[pos].id and frag_id != self.calls[pos].id):
            self.calls.append(_Call(id=frag_id))
            pos = self.slots[index] = len(self.calls) - 1
        call = self.calls[pos]
        call.id = call.id or frag_id
        fn = frag.get("function") or {}
        if fn.get("name"):
            call.name += fn["name"]
        if fn.get("arguments"):
            call.arguments.append(fn["arguments"])

    async def finish(self, sink: ModelChunkSink) -> GenerateResponse:
        if not self.seen:
            raise ModelConnectionError("the stream ended without a single chunk", provider=self.provider)
        parts: list[Part] = []
        if self.reasoning:
            parts.append(Part(reasoning="".join(self.reasoning)))
        if self.text:
            parts.append(Part(text="".join(self.text)))
        calls = [_call_part(c.id, c.name, "".join(c.arguments)) for c in self.calls]
        for call in calls:
            await self.emit(sink, call)
        return build_response([*parts, *calls], _finish(self.finish_reason), usage=self.usage)

    async def answer(self, data: Any, sink: ModelChunkSink) -> GenerateResponse:
        return parse_completion(data, self.provider)


def openai_model(name: str) -> OpenAICompatModel:
    """The ``openai/<name>`` registry factory."""
    return OpenAICompatModel(name, provider="openai")


def ollama_model(name: str) -> OpenAICompatModel:
    """The ``ollama/<name>`` registry factory (local server, no key)."""
    return OpenAICompatModel(name, provider="ollama")
