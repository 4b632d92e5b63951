"""The one module that crosses event loops and threads: the private loop, the twins, tasks, a signal.

Every public ``<verb>_sync`` is made by `twin` (or `stream_twin` for a verb that
returns an async iterator) from its async verb, so a twin has exactly the
verb's parameters, and mypy checks calls to it. A twin runs the verb on one
private loop that lives in a daemon thread started on first use, so the twins
work in a plain script *and* inside an already running loop (a Jupyter cell,
an async test) without nest-asyncio: the calling thread blocks on a
`concurrent.futures.Future` while the private loop does the work.

The other crossings live here too, so there is one place to read them:
`on_portal` runs a coroutine on the private loop and awaits it from any loop
(an MCP session lives on the private loop); `start` makes a widget's work a
task on the running loop, or on the private loop in a plain script; `keep`
holds a background task (a detached turn, a heartbeat) until it is done.

`Signal` is the flag an abort sets. It may be set from any thread: set from a
thread other than the loop that owns it, it hands the set to that loop
(``call_soon_threadsafe``), since asyncio objects are not thread-safe.
"""

from __future__ import annotations

import asyncio
import functools
import os
import threading
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterator
from typing import Any, Concatenate, ParamSpec, TypeVar

__all__ = [
    "Signal",
    "call_on",
    "iterate",
    "keep",
    "on_portal",
    "portal_loop",
    "run",
    "running_loop",
    "soon",
    "start",
    "stream_twin",
    "twin",
]

T = TypeVar("T")
S = TypeVar("S")
P = ParamSpec("P")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None


def portal_loop() -> asyncio.AbstractEventLoop:
    """The private loop, started on first use."""
    global _loop, _thread
    with _lock:
        if _loop is None or not _loop.is_running():
            loop = asyncio.new_event_loop()
            started = threading.Event()

            def main() -> None:
                asyncio.set_event_loop(loop)
                loop.call_soon(started.set)
                loop.run_forever()

            _thread = threading.Thread(target=main, name="nb_agents-sync", daemon=True)
            _thread.start()
            started.wait()
            _loop = loop
        return _loop


def running_loop() -> asyncio.AbstractEventLoop | None:
    """The loop running in this thread, or None."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


async def on_portal(coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro` on the private loop and wait for it from whichever loop we are on."""
    loop = portal_loop()
    here = running_loop()
    if here is loop:
        return await coro
    return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, loop))


def start(coro: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
    """Start `coro` as a task on the running loop (else on the private loop): a widget's work."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    if loop is not None:
        return loop.create_task(coro)

    async def begin() -> asyncio.Task[T]:
        return asyncio.ensure_future(coro)

    return asyncio.run_coroutine_threadsafe(begin(), portal_loop()).result()


# Background work (detached turns, heartbeats) must not be garbage-collected mid-flight.
_BACKGROUND: set[asyncio.Task[Any]] = set()


# what each object of this process does in a child forked from it (`reset_after_fork`)
_FORK_RESETS: weakref.WeakKeyDictionary[Any, Callable[[Any], None]] = weakref.WeakKeyDictionary()


def reset_after_fork(obj: T, reset: Callable[[T], None]) -> None:
    """Call ``reset(obj)`` in a child forked from this process, while `obj` lives.

    None of the parent's threads run in the child: a lock one of them held stays held,
    and what waited on the parent's loops waits for nothing. `reset` gives `obj` fresh
    locks and forgets what was the parent's (pass a function, not a bound method: the
    entry must not keep `obj` alive).
    """
    _FORK_RESETS[obj] = reset


def _after_fork() -> None:
    """In a forked child: the private loop's copy still says it is running, and a twin would
    wait on it forever, so the child starts a loop of its own on first use; the parent's
    background tasks are the parent's; then every object's own reset."""
    global _lock, _loop, _thread
    _lock, _loop, _thread = threading.Lock(), None, None
    _BACKGROUND.clear()
    for obj, reset in list(_FORK_RESETS.items()):
        reset(obj)


os.register_at_fork(after_in_child=_after_fork)


def keep(coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
    """Run `coro` as a task of the running loop that stays referenced until it is done."""
    task = asyncio.ensure_future(coro)
    _BACKGROUND.add(task)
    task.add_done_callback(_BACKGROUND.discard)
    return task


def soon(fn: Callable[[], object], loop: asyncio.AbstractEventLoop | None = None) -> None:
    """Call `fn` on `loop` (default: the private loop) soon, from any thread, without waiting."""
    (loop or portal_loop()).call_soon_threadsafe(fn)


def call_on(loop: asyncio.AbstractEventLoop, fn: Callable[[], object]) -> None:
    """Call `fn` on `loop` and wait until it ran: at once when we are on that loop, else from
    this thread (an object bound to one loop, such as a connection, fed from another thread)."""
    here = running_loop()
    if here is loop:
        fn()
        return

    async def call() -> None:
        fn()

    asyncio.run_coroutine_threadsafe(call(), loop).result()


async def _await(aw: Awaitable[T]) -> T:
    return await aw


def run(aw: Coroutine[Any, Any, T] | Awaitable[T], *, loop: asyncio.AbstractEventLoop | None = None) -> T:
    """Run `aw` to completion and return its result: on `loop` if given and running, else on
    the private loop. The calling thread waits; it must not be the thread of that loop."""
    if loop is None or not loop.is_running():
        loop = portal_loop()
    here = running_loop()
    if here is loop:
        if asyncio.iscoroutine(aw):
            aw.close()  # never awaited: say why instead of warning about it
        raise RuntimeError(
            "a *_sync method was called from async code running on the loop that must run it; "
            "await the async method instead"
        )
    coro = aw if asyncio.iscoroutine(aw) else _await(aw)
    fut = asyncio.run_coroutine_threadsafe(coro, loop)
    try:
        return fut.result()
    except KeyboardInterrupt:
        fut.cancel()
        raise


def iterate(it: AsyncIterator[T], *, loop: asyncio.AbstractEventLoop | None = None) -> Iterator[T]:
    """Iterate an async iterator from sync code, one item per round trip (on `loop`, as `run`)."""
    while True:
        try:
            yield run(it.__anext__(), loop=loop)
        except StopAsyncIteration:
            return


def _home(obj: object) -> asyncio.AbstractEventLoop | None:
    # an object bound to one event loop (a connection) names it `_home_loop`: its twins run there
    return getattr(obj, "_home_loop", None)


def _named(sync: Callable[..., Any], fn: Callable[..., Any]) -> None:
    sync.__name__ = f"{fn.__name__}_sync"
    sync.__qualname__ = f"{fn.__qualname__}_sync"
    sync.__doc__ = (
        f"The sync twin of `{fn.__name__}`: the same parameters; blocks until it is done.\n\n"
        "Works in a script and inside a running loop (a notebook cell)."
    )


def twin(fn: Callable[Concatenate[S, P], Coroutine[Any, Any, T]]) -> Callable[Concatenate[S, P], T]:
    """The sync twin of the async method `fn`: ``send_sync = twin(send)`` in a class body.

    The twin calls the method by name on the instance, so a subclass that
    overrides the async verb gets a twin that runs the override. It runs on the
    private loop, or, for an object bound to one loop (it names it in
    ``_home_loop``, as a connection does), on that loop.
    """
    name = fn.__name__

    @functools.wraps(fn)
    def sync(self: S, /, *args: P.args, **kwargs: P.kwargs) -> T:
        result: T = run(getattr(self, name)(*args, **kwargs), loop=_home(self))
        return result

    _named(sync, fn)
    return sync


def stream_twin(
    fn: Callable[Concatenate[S, P], AsyncIterator[T]],
) -> Callable[Concatenate[S, P], Iterator[T]]:
    """The sync twin of a method returning an async iterator: a plain iterator of its items."""
    name = fn.__name__

    @functools.wraps(fn)
    def sync(self: S, /, *args: P.args, **kwargs: P.kwargs) -> Iterator[T]:
        return iterate(getattr(self, name)(*args, **kwargs), loop=_home(self))

    _named(sync, fn)
    return sync


class Signal(asyncio.Event):
    """An `asyncio.Event` that runs callbacks when set, and may be set from any thread.

    The runner reacts to an abort or a detach through a callback instead of
    keeping a waiter task per turn; handlers still ``await signal.wait()``.
    """

    def __init__(self) -> None:
        super().__init__()
        self._callbacks: list[Callable[[], None]] = []
        try:
            self._owner: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            self._owner = None

    def add_callback(self, fn: Callable[[], None]) -> Callable[[], None]:
        """Call `fn` when the signal is set (at once if it already is); returns a remover."""
        if self.is_set():
            fn()
            return lambda: None
        self._callbacks.append(fn)
        return lambda: self._callbacks.remove(fn) if fn in self._callbacks else None

    def set(self) -> None:
        owner = self._owner
        if owner is not None and not owner.is_closed():
            here = running_loop()
            if here is not owner:
                owner.call_soon_threadsafe(self._set_here)
                return
        self._set_here()

    def _set_here(self) -> None:
        if self.is_set():
            return
        super().set()
        callbacks, self._callbacks = self._callbacks, []
        for fn in callbacks:
            fn()
