"""`AgentConnection`: many turns over one invocation (Go ``agent.Connect``).

Send inputs with `send`, `send_text` or `send_resume` (they only queue),
read chunks with `receive` (it ends after the next ``turnEnd``), and end
with `output`, which closes the input side and returns the final
`AgentOutput`. Works as ``async with agent.connect() as conn`` and, from
sync code, ``with agent.connect() as conn`` with the ``*_sync`` readers.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from types import TracebackType

from ._engine import Engine
from ._sync import call_on, stream_twin, twin
from .errors import FailedPreconditionError
from .protocol import TurnStream
from .types import (
    AgentInit,
    AgentInput,
    AgentOutput,
    AgentStreamChunk,
    CallOptions,
    Message,
    Part,
    ToolResume,
)

__all__ = ["AgentConnection"]

_END = object()


class AgentConnection:
    """A bidirectional, multi-turn connection to an agent.

    Example:
        >>> async def main(agent):                                    # doctest: +SKIP
        ...     async with agent.connect() as conn:
        ...         conn.send_text("hi")
        ...         async for chunk in conn.receive():
        ...             print(chunk.model_chunk.text if chunk.model_chunk else "")
        ...         out = await conn.output()
    """

    def __init__(self, engine: Engine, init: AgentInit, *, options: CallOptions = CallOptions()) -> None:  # noqa: B008
        self.engine = engine
        self.init = init
        self.options = options
        self._inv: TurnStream | None = None
        self._home_loop: asyncio.AbstractEventLoop | None = None
        self._chunks: asyncio.Queue[object] | None = None
        self.custom: object = None

    # -- lifecycle ----------------------------------------------------------------
    async def start(self) -> AgentConnection:
        """Open the invocation (done for you by ``async with``)."""
        if self._inv is None:
            self._home_loop = asyncio.get_running_loop()
            self._chunks = asyncio.Queue()
            queue = self._chunks

            async def on_chunk(chunk: AgentStreamChunk) -> None:
                await queue.put(chunk)

            self._inv = self.engine.open(self.init, options=self.options, on_chunk=on_chunk)
            self._inv.on_done(lambda: queue.put_nowait(_END))
        return self

    async def __aenter__(self) -> AgentConnection:
        return await self.start()

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._inv is not None:
            self._inv.close()

    def __enter__(self) -> AgentConnection:
        return self.start_sync()

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _invocation(self) -> TurnStream:
        if self._inv is None or self._home_loop is None:
            raise FailedPreconditionError(
                "the connection is not open: use `async with agent.connect() as conn` (or `with`)"
            )
        return self._inv

    def _call(self, fn: Callable[..., None], *args: object) -> None:
        """Run a queueing call on the connection's loop, from any thread."""
        self._invocation()
        assert self._home_loop is not None
        call_on(self._home_loop, lambda: fn(*args))

    # -- sending ------------------------------------------------------------------
    def send(self, inp: AgentInput) -> None:
        """Queue one input (a turn); raises if the connection has ended."""
        self._call(self._invocation().send, inp)

    def send_text(self, text: str) -> None:
        """Queue a user text message."""
        self.send(AgentInput(message=Message(role="user", content=[Part(text=text)])))

    def send_message(self, message: Message) -> None:
        self.send(AgentInput(message=message))

    def send_resume(self, resume: ToolResume) -> None:
        """Queue answers to the paused turn."""
        self.send(AgentInput(resume=resume))

    def detach(self) -> None:
        """Detach the turn in flight: it goes on in the background."""
        self.send(AgentInput(detach=True))

    def abort(self) -> None:
        """Abort the turn in flight."""
        self._call(self._invocation().abort)

    def close(self) -> None:
        """Close the input side; the turns already queued still run."""
        if self._inv is not None:
            self._call(self._inv.close)

    # -- receiving ----------------------------------------------------------------
    async def receive(self) -> AsyncIterator[AgentStreamChunk]:
        """Chunks up to and including the next ``turnEnd`` (or the end of input)."""
        self._invocation()
        assert self._chunks is not None
        while True:
            item = await self._chunks.get()
            if item is _END:
                self._chunks.put_nowait(_END)  # later receives end at once too
                return
            assert isinstance(item, AgentStreamChunk)
            yield item
            if item.turn_end is not None:
                return

    async def output(self) -> AgentOutput:
        """Close the input side, wait for the last turn, return the output."""
        return await self._invocation().output()

    start_sync = twin(start)
    receive_sync = stream_twin(receive)
    output_sync = twin(output)
