"""Builders for Genkit GenerateResponse dicts used by the tests."""

from __future__ import annotations

from typing import Any


def text_response(text: str, finish_reason: str = "stop") -> dict[str, Any]:
    """A Genkit GenerateResponse holding one model text message."""
    return {"message": {"role": "model", "content": [{"text": text}]}, "finishReason": finish_reason}


def tool_call_response(*calls: tuple[str, str | None, Any], text: str | None = None) -> dict[str, Any]:
    """A GenerateResponse whose model message requests tools: (name, ref, input)."""
    content: list[dict[str, Any]] = [{"text": text}] if text else []
    for name, ref, inp in calls:
        req: dict[str, Any] = {"name": name, "input": inp}
        if ref is not None:
            req["ref"] = ref
        content.append({"toolRequest": req})
    return {"message": {"role": "model", "content": content}, "finishReason": "stop"}
