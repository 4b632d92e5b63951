"""Slow and stalled clients against `nb-agents serve`: the server stays bounded and answering.

Real processes: the server runs under ``ulimit -n 1024`` where the test says so;
the slow clients are raw sockets of this process.
"""

from __future__ import annotations

import resource
import socket
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from .served import Served

HELLO = {"data": {"message": {"role": "user", "content": [{"text": "hi"}]}}, "init": {}}


def limit_files(n: int) -> Any:
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))

    return apply


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def slow_connection(port: int) -> socket.socket:
    """A client that starts a request and never finishes its headers."""
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(b"POST /bank HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n")
    return s


def well_behaved(url: str) -> tuple[float, int]:
    start = time.monotonic()
    res = httpx.post(url + "/bank", json=HELLO, timeout=10)
    return time.monotonic() - start, res.status_code


@pytest.fixture
def many_files() -> Any:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, 4096)
    if want < 1300:
        pytest.skip(f"this test needs 1,300 open files in the test process; the hard limit is {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_1100_slow_connections_under_1024_files(serve: Any, many_files: Any) -> None:
    server: Served = serve("memory", preexec=limit_files(1024), args=("--header-timeout", "60"))
    socks = []
    try:
        for _ in range(1100):  # more than the server has file descriptors
            socks.append(slow_connection(server.port))
        for _ in range(5):  # a well-behaved client is answered at once: a 200, or a 503 at the cap
            took, code = well_behaved(server.url)
            assert code in (200, 503) and took < 1.0, (code, took)
        answered = {b"503": 0, b"": 0}
        for s in socks:  # the connections beyond the cap were answered 503 and closed, none reset
            s.setblocking(False)
            try:
                data = s.recv(4096)
            except BlockingIOError:
                continue  # still open, waiting for its headers
            assert data.startswith(b"HTTP/1.1 503"), data[:80]
            answered[b"503"] += 1
        assert answered[b"503"] >= 1100 - 768
    finally:
        for s in socks:
            s.close()
    time.sleep(0.5)  # the slow ones are gone: everybody is served again
    took, code = well_behaved(server.url)
    assert code == 200 and took < 1.0, (code, took)
    assert "Traceback" not in server.output()


def test_connections_whose_headers_never_finish_are_closed_with_408(serve: Any) -> None:
    server: Served = serve("memory", args=("--header-timeout", "1"))
    socks = [slow_connection(server.port) for _ in range(20)]
    time.sleep(1.5)
    for s in socks:
        s.settimeout(5)
        assert s.recv(4096).startswith(b"HTTP/1.1 408")
        s.close()
    assert well_behaved(server.url)[1] == 200


def test_slow_headers_and_bodies_are_cut_off(serve: Any) -> None:
    server: Served = serve("memory", args=("--header-timeout", "1", "--body-timeout", "1"))
    idle = socket.create_connection(("127.0.0.1", server.port), timeout=5)  # connects, sends nothing
    partial = slow_connection(server.port)
    body = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    body.sendall(
        b"POST /bank HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
    )
    companion = socket.create_connection(("127.0.0.1", server.port), timeout=5)  # a route beside the turn's
    companion.sendall(
        b"POST /bank/getSnapshot HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: 100\r\n\r\n{"
    )
    start = time.monotonic()
    for s, code in ((idle, b"408"), (partial, b"408"), (body, b"408"), (companion, b"408")):
        data = s.recv(4096)
        assert data.startswith(b"HTTP/1.1 " + code), data[:120]
        s.close()
    assert time.monotonic() - start < 5
    assert well_behaved(server.url)[1] == 200


def test_stalled_streaming_readers_do_not_pin_memory(serve: Any, tmp_path: Path) -> None:
    server: Served = serve(
        "memory", target="edge_app:both", args=("--write-timeout", "2"), env={"NBA_CHUNKS": "5000"}
    )
    pid = server.proc.pid
    # warm up: one full streamed turn read to the end
    with httpx.stream("POST", server.url + "/chatty?stream=true", json=HELLO, timeout=30) as res:
        assert res.status_code == 200 and sum(len(b) for b in res.iter_bytes()) > 5_000_000
    base = rss_kib(pid)
    readers = []
    for _ in range(20):  # each asks for 5 MB of chunks and reads none of them
        s = socket.create_connection(("127.0.0.1", server.port), timeout=5)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        body = b'{"data":{"message":{"role":"user","content":[{"text":"talk"}]}},"init":{}}'
        s.sendall(
            b"POST /chatty?stream=true HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        readers.append(s)
    peak = base
    for _ in range(30):
        time.sleep(0.2)
        peak = max(peak, rss_kib(pid))
    time.sleep(3)  # past the write timeout: the stalled readers are dropped
    after = rss_kib(pid)
    for s in readers:
        s.close()
    assert (peak - base) < 50 * 1024, f"server grew {(peak - base) / 1024:.1f} MB"
    assert after <= peak
    assert well_behaved(server.url)[1] == 200
