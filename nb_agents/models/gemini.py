"""Gemini (Google AI) ``generateContent`` and ``streamGenerateContent?alt=sse``.

Maps Genkit requests onto the Gemini REST API and back: roles ``user`` and
``model`` (tool results travel as ``user`` content), system messages become
``systemInstruction``, tools become ``functionDeclarations`` with the full
JSON schema in ``parametersJsonSchema``, a tool request is a ``functionCall``
part and a tool response a ``functionResponse`` part (an output that is not
an object is wrapped as ``{"output": value}``).

Gemini calls usually carry no id: a call without one gets a fresh ref
``<name>-<12 hex digits>`` (`mint_ref`), unique within the session, so an answer
built for one turn's call can never resume another's; Gemini itself matches
responses to calls by name and order, which is the order our tool message
keeps, so the ref is never sent back. An id Gemini does send is used as the
ref and echoed back.
``thoughtSignature`` values (required back by Gemini 3 during function
calling) are kept in the part's metadata and returned with the part.

Finish reasons: STOP -> stop, MAX_TOKENS -> length, SAFETY, RECITATION,
BLOCKLIST, PROHIBITED_CONTENT, SPII, IMAGE_SAFETY -> blocked, anything else
-> other; a prompt blocked before any candidate (``promptFeedback``) ->
blocked with the reason as finish message.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..types import GenerateRequest, GenerateResponse, Message, Part, ToolRequest
from ._provider import HttpModel, StreamState
from .base import ModelChunkSink
from .convert import add_turn, build_response, data_url, mint_ref, split_config, system_text, tool_schema
from .errors import ModelConnectionError, ModelResponseError, error_for_http_status
from .http import ServerSentEvent, read_error

__all__ = ["API_KEY_ENV", "GEMINI_URL", "GeminiModel"]

GEMINI_URL = "https://generativelanguage.googleapis.com/v1beta"
API_KEY_ENV = ("GEMINI_API_KEY", "GOOGLE_API_KEY")

_BLOCKED = {"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY"}
_SETTINGS = {
    "temperature": "temperature",
    "max_output_tokens": "maxOutputTokens",
    "top_p": "topP",
    "top_k": "topK",
    "stop_sequences": "stopSequences",
}
_TOP_LEVEL = {"safetySettings", "toolConfig", "cachedContent", "labels"}
_SIGNATURE = "thoughtSignature"
_CALL_ID = "functionCallId"


class GeminiModel(HttpModel):
    """A Gemini model through the Google AI (``generativelanguage``) REST API.

    Args:
        name: The model id (``"gemini-flash-latest"``; ``models/`` is optional).
        base_url: The API root; default the public ``v1beta`` endpoint.
        api_key: The key; default ``GEMINI_API_KEY``, then ``GOOGLE_API_KEY``
            (read on the first call, sent as ``x-goog-api-key``).
        client: An `httpx.AsyncClient` to send with (tests pass a MockTransport).
        timeout, max_retries, config, headers, sleep: As for `OpenAICompatModel`.
            Config keys other than the common ones go into ``generationConfig``,
            except ``safetySettings``, ``toolConfig``, ``cachedContent`` and
            ``labels``, which are request fields.

    Example:
        >>> GeminiModel("gemini-flash-latest").name
        'googleai/gemini-flash-latest'
    """

    provider = "googleai"
    default_base_url = GEMINI_URL
    key_env = API_KEY_ENV
    model_prefix = "models/"

    def endpoint(self, request: GenerateRequest, *, stream: bool) -> str:
        cfg = split_config(self.config, request.config)
        model = (cfg.version or self.model).removeprefix(self.model_prefix)
        if stream:
            return f"{self.base_url}/models/{model}:streamGenerateContent?alt=sse"
        return f"{self.base_url}/models/{model}:generateContent"

    def request_headers(self, key: str | None) -> dict[str, str]:
        return {"Content-Type": "application/json", "x-goog-api-key": key or "", **self.headers}

    def stream_state(self) -> _Assembler:
        return _Assembler(self.provider)

    def request_body(self, request: GenerateRequest, *, stream: bool) -> dict[str, Any]:
        """The JSON body for `request`, streamed or not (public so tests can assert it)."""
        cfg = split_config(self.config, request.config)
        body: dict[str, Any] = {"contents": to_contents(request.messages)}
        system = system_text(request.messages)
        if system:
            body["systemInstruction"] = {"parts": [{"text": system}]}
        if request.tools:
            body["tools"] = [
                {
                    "functionDeclarations": [
                        {
                            "name": t.name,
                            "description": t.description,
                            "parametersJsonSchema": tool_schema(t.input_schema),
                        }
                        for t in request.tools
                    ]
                }
            ]
            mode = {"auto": "AUTO", "required": "ANY", "none": "NONE"}.get(request.tool_choice or "")
            if mode:
                body["toolConfig"] = {"functionCallingConfig": {"mode": mode}}
        gen = cfg.settings(_SETTINGS)
        for key, value in cfg.extra.items():
            if key in _TOP_LEVEL:
                body[key] = value
            elif key == "generationConfig" and isinstance(value, Mapping):
                gen.update(value)
            else:
                gen[key] = value
        if gen:
            body["generationConfig"] = gen
        return body


def to_contents(messages: list[Message]) -> list[dict[str, Any]]:
    """Genkit messages (system ones excluded) as Gemini ``contents``."""
    out: list[dict[str, Any]] = []
    call_ids: dict[str, str] = {}  # ref -> Gemini's own call id, from the latest model message
    for msg in messages:
        if msg.role == "system":
            continue
        parts: list[dict[str, Any]] = []
        if msg.role == "model":
            call_ids = {}
            for p in msg.content:
                part = _model_part(p)
                if part is not None:
                    parts.append(part)
                call_id = (p.metadata or {}).get(_CALL_ID)
                if p.tool_request is not None and p.tool_request.ref and call_id:
                    call_ids[p.tool_request.ref] = call_id
        elif msg.role == "tool":
            for p in msg.content:
                if p.tool_response is not None:
                    tr = p.tool_response
                    response: dict[str, Any] = {
                        "name": tr.name,
                        "response": tr.output if isinstance(tr.output, dict) else {"output": tr.output},
                    }
                    call_id = call_ids.get(tr.ref or "")
                    if call_id:
                        response["id"] = call_id
                    parts.append({"functionResponse": response})
        else:
            parts = [q for q in (_user_part(p) for p in msg.content) if q is not None]
        add_turn(out, "model" if msg.role == "model" else "user", "parts", parts)
    return out


def _user_part(p: Part) -> dict[str, Any] | None:
    if p.text is not None:
        return {"text": p.text}
    if p.media is not None:
        inline = data_url(p.media.url)
        if inline is not None:
            return {"inlineData": {"mimeType": p.media.content_type or inline[0], "data": inline[1]}}
        file: dict[str, Any] = {"fileUri": p.media.url}
        if p.media.content_type:
            file["mimeType"] = p.media.content_type
        return {"fileData": file}
    return None


def _model_part(p: Part) -> dict[str, Any] | None:
    meta = p.metadata or {}
    signature = meta.get(_SIGNATURE)
    out: dict[str, Any]
    if p.tool_request is not None:
        tr = p.tool_request
        call: dict[str, Any] = {"name": tr.name, "args": tr.input if isinstance(tr.input, dict) else {}}
        if meta.get(_CALL_ID):
            call["id"] = meta[_CALL_ID]
        out = {"functionCall": call}
    elif p.reasoning is not None and signature:
        out = {"text": p.reasoning, "thought": True}
    elif p.text is not None:
        out = {"text": p.text}
    else:
        return None
    if signature:
        out[_SIGNATURE] = signature
    return out


def _finish(reason: str | None) -> str:
    if not reason or reason == "FINISH_REASON_UNSPECIFIED":
        return "unknown"
    if reason == "STOP":
        return "stop"
    if reason == "MAX_TOKENS":
        return "length"
    return "blocked" if reason in _BLOCKED else "other"


class _Assembler(StreamState):
    """Builds one response from ``GenerateContentResponse`` objects (one, or a stream)."""

    def reset(self) -> None:
        self.parts: list[Part] = []
        self.finish_reason: str | None = None
        self.finish_message: str | None = None
        self.usage: dict[str, Any] | None = None
        self.seen = 0

    async def feed(self, event: ServerSentEvent, sink: ModelChunkSink) -> None:
        for part in self.take(self.event_json(event)):
            await self.emit(sink, part)

    async def answer(self, data: Any, sink: ModelChunkSink) -> GenerateResponse:
        for item in data if isinstance(data, list) else [data]:
            for part in self.take(item):
                await self.emit(sink, part)
        return self.response()

    async def finish(self, sink: ModelChunkSink) -> GenerateResponse:
        return self.response()

    def take(self, data: Any) -> list[Part]:
        """Add one ``GenerateContentResponse``; return the parts to stream (deltas and calls)."""
        self.seen += 1
        if isinstance(data, dict) and data.get("error") is not None:
            message, kind = read_error(data, "error in stream")
            code = data["error"].get("code") if isinstance(data["error"], dict) else None
            status = code if isinstance(code, int) else 500
            raise error_for_http_status(status, message, provider=self.provider, error_type=kind, body=data)
        if not isinstance(data, dict):
            raise ModelResponseError(f"unexpected answer {str(data)[:200]}", provider=self.provider)
        meta = data.get("usageMetadata")
        if isinstance(meta, dict):
            self.usage = {
                "inputTokens": meta.get("promptTokenCount"),
                "outputTokens": meta.get("candidatesTokenCount"),
                "totalTokens": meta.get("totalTokenCount"),
                "thoughtsTokens": meta.get("thoughtsTokenCount"),
                "cachedContentTokens": meta.get("cachedContentTokenCount"),
            }
        candidates = data.get("candidates") or []
        if not candidates:
            blocked = (data.get("promptFeedback") or {}).get("blockReason")
            if blocked:
                self.finish_reason, self.finish_message = "SAFETY", f"prompt blocked: {blocked}"
            return []
        cand = candidates[0]
        if cand.get("finishReason"):
            self.finish_reason = cand["finishReason"]
        if cand.get("finishMessage"):
            self.finish_message = cand["finishMessage"]
        new = (self._add(raw) for raw in (cand.get("content") or {}).get("parts") or [])
        return [part for part in new if part is not None]

    def _add(self, raw: dict[str, Any]) -> Part | None:
        """Add one API part; return what to stream (a delta or a whole call)."""
        signature = raw.get(_SIGNATURE)
        meta: dict[str, Any] = {_SIGNATURE: signature} if signature else {}
        if "functionCall" in raw:
            fc = raw["functionCall"] or {}
            name = fc.get("name", "")
            if fc.get("id"):
                meta[_CALL_ID] = fc["id"]
            part = Part(
                tool_request=ToolRequest(
                    name=name, ref=fc.get("id") or mint_ref(name), input=fc.get("args") or {}
                ),
                metadata=meta or None,
            )
            self.parts.append(part)
            return part
        text = raw.get("text")
        if text is None:
            return None
        thought = bool(raw.get("thought"))
        last = self.parts[-1] if self.parts else None
        same_kind = last is not None and last.tool_request is None and (last.reasoning is not None) == thought
        if last is not None and same_kind and not (last.metadata or {}).get(_SIGNATURE):
            # a streamed delta continues the open text (or thought) part
            if thought:
                last.reasoning = (last.reasoning or "") + text
            else:
                last.text = (last.text or "") + text
            if signature:
                last.metadata = {_SIGNATURE: signature}
        else:
            self.parts.append(
                Part(reasoning=text, metadata=meta or None)
                if thought
                else Part(text=text, metadata=meta or None)
            )
        if not text:
            return None
        return Part(reasoning=text) if thought else Part(text=text)

    def response(self) -> GenerateResponse:
        if not self.seen:
            raise ModelConnectionError("the stream ended without a single response", provider=self.provider)
        return build_response(
            self.parts, _finish(self.finish_reason), usage=self.usage, finish_message=self.finish_message
        )
