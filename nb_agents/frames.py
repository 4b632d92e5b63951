"""The frames of a stream, both ways: server-sent events and newline-delimited JSON.

One module for every stream nb_agents writes or reads:

* `frame`: what the HTTP server writes, one ``data: <json>`` event per payload;
* `SseParser` / `ServerSentEvent`: a sans-I/O parser of ``text/event-stream``
  lines, for the model providers (OpenAI and Gemini send ``data:`` lines only,
  Anthropic ``event:`` names too);
* `agent_frames`: the JSON payloads of an agent's stream, for the remote
  client: SSE (several ``data`` lines joined), express's ``error: {...}``
  frames, and newline-delimited JSON.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from .errors import NbAgentsError

__all__ = ["FrameError", "ServerSentEvent", "SseParser", "agent_frames", "frame"]


class FrameError(NbAgentsError, ValueError):
    """A frame whose data is not the JSON it should be (the readers say whose stream it was)."""

    status = "INTERNAL"

    def __init__(self, data: str, why: str) -> None:
        super().__init__(f"{why}: {data[:200]!r}")
        self.data = data


def frame(payload: dict[str, Any]) -> bytes:
    """One SSE frame: ``data: <compact json>`` and a blank line.

    The JSON is ASCII (non-ASCII characters as ``\\u`` escapes): Genkit's JS client
    decodes each network read on its own, so a multi-byte UTF-8 character split
    between two reads would reach it garbled.
    """
    return b"data: " + _FRAME(payload).encode() + b"\n\n"


_FRAME = json.JSONEncoder(separators=(",", ":"), ensure_ascii=True).encode  # one, not one a call


@dataclass(frozen=True)
class ServerSentEvent:
    """One event of a ``text/event-stream``: its ``event:`` name and data."""

    event: str | None
    data: str

    def json(self) -> Any:
        """The data as JSON; `FrameError` if it is not JSON."""
        try:
            return json.loads(self.data)
        except json.JSONDecodeError as exc:
            raise FrameError(self.data, "not JSON") from exc


class SseParser:
    """Turns the lines of an event stream into `ServerSentEvent` values.

    Args:
        fields: The fields whose values are an event's data (``data``; an agent
            stream also carries express's ``error`` frames).

    Example:
        >>> p = SseParser()
        >>> [p.feed(line) for line in ["event: ping", 'data: {"a":1}', ""]][-1]
        ServerSentEvent(event='ping', data='{"a":1}')
    """

    def __init__(self, fields: tuple[str, ...] = ("data",)) -> None:
        self._fields = fields
        self._event: str | None = None
        self._data: list[str] = []

    def feed(self, line: str) -> ServerSentEvent | None:
        """Consume one line; return the event a blank line completes."""
        line = line.rstrip("\r\n")
        if not line:
            return self.flush()
        if line.startswith(":"):
            return None
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "event":
            self._event = value
        elif field in self._fields:
            self._data.append(value)
        return None

    def flush(self) -> ServerSentEvent | None:
        """The pending event, if any (the stream may end without a blank line)."""
        if not self._data:
            self._event = None
            return None
        event = ServerSentEvent(self._event, "\n".join(self._data))
        self._event, self._data = None, []
        return event

    @property
    def pending(self) -> bool:
        """Whether an event has started and not ended."""
        return bool(self._data)


async def agent_frames(
    lines: AsyncIterator[str], bad: Callable[[str, str], Exception]
) -> AsyncIterator[dict[str, Any]]:
    """The JSON object of each frame of an agent stream, from its lines.

    `bad(data, why)` is the error to raise for a frame that is not a JSON object.
    """
    parser = SseParser(("data", "error"))

    def obj(text: str) -> dict[str, Any]:
        try:
            value = json.loads(text)
        except ValueError:
            raise bad(text, "not JSON") from None
        if not isinstance(value, dict):
            raise bad(text, "not a JSON object")
        return value

    async for line in lines:
        if line.startswith("{") and not parser.pending:  # newline-delimited JSON
            yield obj(line)
            continue
        event = parser.feed(line)
        if event is not None:
            yield obj(event.data)
    event = parser.flush()
    if event is not None:
        yield obj(event.data)
