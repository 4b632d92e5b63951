"""Turns in flight: a streaming turn (`AgentTurn`, its sync twin) and a background one (`DetachedTask`).

`Chat.send_stream` and `Chat.resume_stream` return an `AgentTurn`: iterate it
for chunks, await its ``response``. `Chat.detach` returns a `DetachedTask`,
which polls the agent for the snapshot of a turn that goes on without its caller.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TYPE_CHECKING, Concatenate, ParamSpec, TypeVar

from . import _sync
from ._sync import Signal, twin
from .responses import AgentChunk, AgentResponse
from .types import AgentInput, CallOptions, SessionSnapshot

if TYPE_CHECKING:
    from .chat import Chat
    from .protocol import AgentEndpoint

__all__ = ["DONE", "AgentTurn", "DetachedTask", "SyncAgentTurn", "sync_turn"]

S = TypeVar("S")
P = ParamSpec("P")

TERMINAL = ("completed", "failed", "aborted", "expired")
DONE = object()  # the end of a turn's chunk queue


class AgentTurn:
    """A streaming turn: iterate it for `AgentChunk` values, await ``response``.

    Example:
        >>> async def main(chat):                                      # doctest: +SKIP
        ...     turn = chat.send_stream("hi")
        ...     async for chunk in turn:
        ...         print(chunk.text, end="")
        ...     res = await turn.response
    """

    def __init__(self, chat: Chat, inp: AgentInput, options: CallOptions) -> None:
        self._chat = chat
        self._input = inp
        self._options = options
        self._queue: asyncio.Queue[object] | None = None
        self._task: asyncio.Task[AgentResponse] | None = None
        self._abort: Signal | None = None

    def _start(self) -> asyncio.Task[AgentResponse]:
        if self._task is None:
            self._queue = asyncio.Queue()
            self._abort = Signal()
            self._task = asyncio.ensure_future(
                self._chat._run(self._input, self._options, self._queue, self._abort)
            )
        return self._task

    @property
    def response(self) -> asyncio.Task[AgentResponse]:
        """Await it for the `AgentResponse` (raises `AgentError` on failure)."""
        return self._start()

    def abort(self) -> None:
        """Abort the turn; the response resolves with finish reason ``aborted``."""
        self._start()
        assert self._abort is not None
        self._abort.set()

    def __aiter__(self) -> AsyncIterator[AgentChunk]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[AgentChunk]:
        self._start()
        assert self._queue is not None
        while True:
            item = await self._queue.get()
            if item is DONE:
                return
            assert isinstance(item, AgentChunk)
            yield item


class SyncAgentTurn:
    """The sync twin of `AgentTurn`: ``for chunk in turn``, then ``turn.response``."""

    def __init__(self, turn: AgentTurn) -> None:
        self._turn = turn

    def __iter__(self) -> Iterator[AgentChunk]:
        return _sync.iterate(aiter(self._turn))

    @property
    def response(self) -> AgentResponse:
        return _sync.run(self._turn.response)

    def abort(self) -> None:
        # the turn lives on the private loop: start it (if need be) and abort it there
        _sync.soon(self._turn.abort)


def sync_turn(
    fn: Callable[Concatenate[S, P], AgentTurn],
) -> Callable[Concatenate[S, P], SyncAgentTurn]:
    """The sync twin of a verb that starts a streamed turn: ``send_stream_sync = sync_turn(send_stream)``."""

    @functools.wraps(fn)
    def sync(self: S, /, *args: P.args, **kwargs: P.kwargs) -> SyncAgentTurn:
        return SyncAgentTurn(fn(self, *args, **kwargs))

    sync.__name__ = sync.__qualname__ = f"{fn.__name__}_sync"
    sync.__doc__ = f"The sync twin of `{fn.__name__}`: ``for chunk in turn``, then ``turn.response``."
    return sync


class DetachedTask:
    """A turn running in the background; poll it or wait for it."""

    def __init__(self, agent: AgentEndpoint, snapshot_id: str) -> None:
        self.agent = agent
        self.snapshot_id = snapshot_id

    async def poll(self) -> SessionSnapshot | None:
        """The snapshot as it is now."""
        return await self.agent.get_snapshot(self.snapshot_id)

    async def wait(self, *, interval: float = 0.5, timeout: float | None = None) -> SessionSnapshot:
        """Poll until the snapshot is terminal (completed, failed, aborted, expired)."""
        async with asyncio.timeout(timeout):
            while True:
                snap = await self.poll()
                if snap is not None and snap.status in TERMINAL:
                    return snap
                await asyncio.sleep(interval)

    async def abort(self) -> str | None:
        """Abort the background turn; returns the previous status."""
        return await self.agent.abort(self.snapshot_id)

    poll_sync = twin(poll)
    wait_sync = twin(wait)
    abort_sync = twin(abort)
