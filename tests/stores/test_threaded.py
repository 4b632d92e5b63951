"""`Workers`: a store's own worker threads (the PostgreSQL store runs its calls there)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from nb_agents.stores._threaded import Workers

pytestmark = pytest.mark.anyio


async def test_calls_past_the_size_wait_in_the_queue_not_in_more_threads() -> None:
    workers = Workers(2, "test-workers")
    lock = threading.Lock()
    running, peak, threads = 0, 0, set()

    def call(n: int) -> int:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
            threads.add(threading.get_ident())
        time.sleep(0.03)
        with lock:
            running -= 1
        return n * n

    results = await asyncio.gather(*(workers.run(lambda n=n: call(n)) for n in range(8)))
    assert results == [n * n for n in range(8)]
    assert peak == 2 and len(threads) == 2
    assert threading.get_ident() not in threads  # never on the loop's thread
    workers.close()


async def test_a_cancelled_caller_returns_at_once_and_its_call_runs_to_its_end() -> None:
    workers = Workers(1, "test-workers")
    release, finished = threading.Event(), []

    def blocking() -> str:
        release.wait(5)
        finished.append("first")
        return "first"

    def queued() -> str:
        finished.append("queued")
        return "queued"

    first = asyncio.ensure_future(workers.run(blocking))
    second = asyncio.ensure_future(workers.run(queued))  # behind it: the only thread is busy
    await asyncio.sleep(0.05)
    first.cancel()
    second.cancel()
    t0 = time.monotonic()
    for task in (first, second):
        with pytest.raises(asyncio.CancelledError):
            await task
    assert time.monotonic() - t0 < 1 and finished == []  # the callers did not wait for the thread
    release.set()
    assert await workers.run(lambda: "after") == "after"  # queued behind both: they ran first
    assert finished == ["first", "queued"]  # begun is begun, and what was queued ran too
    workers.close()


async def test_a_closed_workers_runs_later_calls_in_new_threads() -> None:
    workers = Workers(1, "test-workers")
    one = await workers.run(threading.current_thread)
    workers.close()
    one.join(5)  # the idle thread was let go
    two = await workers.run(threading.current_thread)
    assert not one.is_alive() and two.is_alive() and two is not one
    assert two is not threading.current_thread()
    workers.close()


def test_a_call_stuck_in_a_worker_thread_does_not_hold_up_the_interpreter_exit(tmp_path: Path) -> None:
    """As anyio's worker threads: a call blocked on the network must not keep a process alive."""
    script = tmp_path / "stuck.py"
    script.write_text(
        "import asyncio, threading, time\n"
        "from nb_agents.stores._threaded import Workers\n"
        "async def main():\n"
        "    workers = Workers(1, 'stuck')\n"
        "    started = threading.Event()\n"
        "    def stuck():\n"
        "        started.set()\n"
        "        time.sleep(60)\n"
        "    task = asyncio.ensure_future(workers.run(stuck))\n"
        "    while not started.is_set():\n"
        "        await asyncio.sleep(0.01)\n"
        "    task.cancel()\n"
        "    print('leaving', flush=True)\n"
        "asyncio.run(main())\n"
    )
    t0 = time.monotonic()
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "leaving" and time.monotonic() - t0 < 20


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
async def test_a_forked_child_runs_calls_in_threads_of_its_own() -> None:
    workers = Workers(1, "test-workers")
    parent_thread = await workers.run(threading.get_ident)  # the parent's one thread exists
    pid = os.fork()
    if pid == 0:  # the child: its copy of the executor counts a thread it does not have
        code = 1
        try:
            signal.alarm(10)  # a hang is a failure, not a stuck suite
            child_thread = asyncio.run(workers.run(threading.get_ident))
            code = 0 if child_thread != threading.get_ident() else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert await workers.run(threading.get_ident) == parent_thread  # the parent's thread, unchanged
    workers.close()
