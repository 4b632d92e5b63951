"""A sans-I/O parser for server-sent events (``text/event-stream``).

Feed it the lines of a response; it hands back each complete event. All
three providers stream this way (OpenAI and Gemini with ``data:`` lines
only, Anthropic with ``event:`` names too); it knows nothing about HTTP.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .errors import ModelResponseError

__all__ = ["ServerSentEvent", "SseParser"]


@dataclass(frozen=True)
class ServerSentEvent:
    """One event of a ``text/event-stream``: its ``event:`` name and ``data:``."""

    event: str | None
    data: str

    def json(self, provider: str) -> Any:
        """The data as JSON; a `ModelResponseError` if it is not JSON."""
        try:
            return json.loads(self.data)
        except json.JSONDecodeError as exc:
            raise ModelResponseError(
                f"unreadable stream event {self.data[:200]!r}", provider=provider, details={"data": self.data}
            ) from exc


class SseParser:
    """Turns the lines of an event stream into `ServerSentEvent` values.

    Example:
        >>> p = SseParser()
        >>> [p.feed(line) for line in ["event: ping", 'data: {"a":1}', ""]][-1]
        ServerSentEvent(event='ping', data='{"a":1}')
    """

    def __init__(self) -> None:
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
        elif field == "data":
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
