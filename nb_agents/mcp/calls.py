"""One MCP tool call in flight, as a stream of events; and which call a question belongs to.

A `Call` runs ``tools/call`` as a task of the connection's loop (nb_agents'
private loop, where the MCP session lives) and turns everything that happens
to it into events the tool reads one at a time:

* ``Progress``: a progress notification for this call;
* ``Asked``: the server asked a question (elicitation); the call waits for
  `Call.reply` while the turn is paused;
* ``Finished``: the server's result; ``Failed``: the call raised.

MCP's stdio transport does not say which request an elicitation belongs to,
so `Dispatch` lets one call at a time be *active* on a connection (running,
not waiting for an answer): a question goes to the active call. A call that
asks steps aside, so other calls run while its turn waits; once answered, it
waits its turn to be active again. Calls to one server therefore run one at
a time, which is what keeps every answer with the question it answers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["Asked", "Call", "Dispatch", "Event", "Failed", "Finished", "Progress"]


@dataclass(frozen=True, slots=True)
class Progress:
    progress: float
    total: float | None
    message: str | None


@dataclass(frozen=True, slots=True)
class Asked:
    params: dict[str, Any]  # the elicitation request's params, as JSON


@dataclass(frozen=True, slots=True)
class Finished:
    result: Any  # mcp.types.CallToolResult


@dataclass(frozen=True, slots=True)
class Failed:
    error: BaseException


Event = Progress | Asked | Finished | Failed


class Dispatch:
    """Which call of one connection is active (may be asked a question)."""

    def __init__(self) -> None:
        self._turn = asyncio.Lock()
        self.active: Call | None = None

    async def enter(self, call: Call) -> None:
        await self._turn.acquire()
        self.active = call

    def leave(self, call: Call) -> None:
        if self.active is call:
            self.active = None
            self._turn.release()


RunCall = Callable[["Call"], Awaitable[Any]]


class Call:
    """A ``tools/call`` in flight. Lives on the connection's loop; use it only there.

    Args:
        dispatch: The connection's `Dispatch`.
        run: Sends the request: ``await run(call)`` returns the result (it
            reports progress through `Call.on_progress`).
        tool: The tool's name, for messages.
    """

    def __init__(self, dispatch: Dispatch, run: RunCall, tool: str) -> None:
        self.dispatch = dispatch
        self.tool = tool
        self._run = run
        self._events: asyncio.Queue[Event] = asyncio.Queue()
        self._answer: asyncio.Future[Any] | None = None
        self.task: asyncio.Task[None] | None = None
        self.lost: BaseException | None = None  # set when the connection went away
        self.question: dict[str, Any] | None = None  # the last elicitation request's params

    @property
    def waiting(self) -> bool:
        """Whether the call waits for an answer to a question."""
        return self._answer is not None and not self._answer.done()

    async def start(self) -> None:
        """Wait to be active, then send the request."""
        await self.dispatch.enter(self)
        self.task = asyncio.ensure_future(self._main())

    async def _main(self) -> None:
        try:
            self._events.put_nowait(Finished(await self._run(self)))
        except asyncio.CancelledError:
            self._events.put_nowait(Failed(self.lost or asyncio.CancelledError()))
            raise
        except Exception as exc:  # noqa: BLE001 - handed to the tool, which says what it means
            self._events.put_nowait(Failed(self.lost or exc))
        finally:
            self.dispatch.leave(self)

    async def on_progress(self, progress: float, total: float | None, message: str | None) -> None:
        self._events.put_nowait(Progress(progress, total, message))

    async def ask(self, params: dict[str, Any]) -> Any:
        """The server asks (the elicitation callback calls this): step aside until answered."""
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._answer = fut
        self.question = params
        self._events.put_nowait(Asked(params))
        self.dispatch.leave(self)
        return await fut

    async def reply(self, result: Any) -> None:
        """Answer the question (an ``mcp.types.ElicitResult``) and go on."""
        fut = self._answer
        if fut is None or fut.done():
            return
        await self.dispatch.enter(self)
        if fut.done():  # cancelled while we waited to be active
            self.dispatch.leave(self)
            return
        fut.set_result(result)

    async def next(self) -> Event:
        """The next event (waits for one)."""
        return await self._events.get()

    def abandon(self, reason: BaseException) -> None:
        """Stop the call (its connection went away, its turn was aborted, it was replaced)."""
        if self.lost is None:
            self.lost = reason
        if self._answer is not None and not self._answer.done():
            self._answer.cancel()
        if self.task is not None and not self.task.done():
            self.task.cancel()
        elif self.task is None:
            self._events.put_nowait(Failed(reason))
        # a task cancelled before its first step never runs its `finally`: step aside here too
        self.dispatch.leave(self)
