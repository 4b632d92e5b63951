"""Connection bounds for `nb-agents serve`: at most N connections, and a deadline for request headers.

uvicorn bounds requests in flight (``limit_concurrency``, a 503) and idle
keep-alive connections, but not a connection that opens and then sends its
headers slowly, or never: a few hundred such sockets use up the process's file
descriptors, after which every client, well-behaved or not, waits or is reset.
`guarded_protocol` wraps uvicorn's HTTP protocol so that

* a connection beyond `max_connections` is answered ``503`` at once and closed
  gracefully: what the client has sent is read and dropped first, so closing
  sends a FIN after the answer, not a reset, and its file descriptor is free
  again at once (a refused connection must not hold one: the process would run
  out and stop accepting);
* a connection whose request headers have not all arrived `header_timeout`
  seconds after its first byte (or after it connected, or after its previous
  response) is answered ``408`` and closed the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import resource
from typing import Any

__all__ = ["ACCEPT_BATCH", "default_max_connections", "guarded_protocol"]

log = logging.getLogger("nb_agents.server")


ACCEPT_BATCH = 64
"""The listen backlog, which is also how many connections asyncio accepts in one go."""

_RESERVE = 64  # descriptors kept for stores, logs, outbound calls


def default_max_connections() -> int:
    """A connection cap that leaves file descriptors for stores, logs and outbound calls.

    asyncio accepts up to a backlog's worth of connections in one pass of its
    loop; they are refused in the next pass and their descriptors freed in the
    one after, so three batches must stay free beyond the cap (with two, a
    flood on a loaded machine ran the process out of descriptors: EMFILE).
    """
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 4096
    return max(16, min(4096, soft - 3 * ACCEPT_BATCH - _RESERVE))


def _response(code: int, reason: str, status: str, message: str) -> bytes:
    body = json.dumps({"status": status, "message": message}).encode()
    head = (
        f"HTTP/1.1 {code} {reason}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode() + body


_BUSY = _response(
    503,
    "Service Unavailable",
    "UNAVAILABLE",
    "this server is at its connection limit (max_connections); try again shortly",
)
_SLOW = _response(
    408,
    "Request Timeout",
    "DEADLINE_EXCEEDED",
    "the request headers did not arrive in time (header_timeout); send the whole request at once",
)


def guarded_protocol(
    base: type[asyncio.Protocol], *, max_connections: int, header_timeout: float
) -> type[Any]:
    """uvicorn's HTTP protocol class `base`, with the bounds of the module docstring."""

    class Guarded(base):  # type: ignore[valid-type,misc]  # a uvicorn protocol class, built at run time
        _nba_refused = False
        _nba_timer: asyncio.TimerHandle | None = None
        _nba_armed_for: Any = None

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(transport)
            if len(self.connections) > max_connections:
                self._nba_refuse(_BUSY)
                return
            self._nba_arm()

        def data_received(self, data: bytes) -> None:
            if self._nba_refused:
                return  # read and dropped: the answer is already on its way
            if self._nba_timer is None and (self.cycle is None or self.cycle.response_complete):
                self._nba_arm()  # the first bytes of a request: its headers have a deadline
            super().data_received(data)

        def connection_lost(self, exc: Exception | None) -> None:
            if self._nba_timer is not None:
                self._nba_timer.cancel()
                self._nba_timer = None
            super().connection_lost(exc)

        def _nba_arm(self) -> None:
            self._nba_armed_for = self.cycle
            self._nba_timer = self.loop.call_later(header_timeout, self._nba_deadline)

        def _nba_deadline(self) -> None:
            self._nba_timer = None
            if self.transport.is_closing() or self.cycle is not self._nba_armed_for:
                return  # a request started in time (or the connection is gone)
            if self._nba_armed_for is not None and not self._nba_armed_for.response_complete:
                return  # still answering the previous request
            self._nba_refuse(_SLOW)

        def _nba_refuse(self, answer: bytes) -> None:
            self._nba_refused = True
            transport = self.transport
            sock = transport.get_extra_info("socket")
            if sock is not None:
                # closing a socket with unread bytes sends a reset, which may lose the answer
                with contextlib.suppress(OSError):
                    while os.read(sock.fileno(), 65536):
                        pass
            transport.write(answer)
            transport.close()  # flushes the answer, then closes

    Guarded.__name__ = Guarded.__qualname__ = f"Guarded{base.__name__}"
    return Guarded
