"""Two races S5's fault suite found in `nb-agents serve`, reproduced without load (issue 11).

Each trial is one approval cycle of ``peers/nb_agents/s5_app.py`` against a real
``python -m nb_agents serve`` process, on SQLite or on the test suite's throwaway
PostgreSQL (``s5_pg``)::

    .venv/bin/python benchmarks/repro/i11_races.py abort-as-it-finishes [--store postgres] [--trials 50]
    .venv/bin/python benchmarks/repro/i11_races.py resend-after-early-disconnect --store postgres

* ``abort-as-it-finishes``: the resume's tool sleeps 0.3 s; ``/abort`` of its
  pending child is aimed at the end of that sleep (-45 to +5 ms, in 0.5 ms
  steps), so that some land as the turn writes its final row. There the live
  answer is ``stop`` with the completed text, but the row records ``aborted``,
  and the identical answer sent again returns ``aborted``; the explicit retry
  the client then sends runs the tool a second time, for an answer it was told
  had completed.
* ``resend-after-early-disconnect``: the answer is sent on a raw socket that is
  closed 0-4 ms later (before any tool started, so the claim is released), and
  the answer is sent again at once. It should run normally; sometimes it gets
  ``aborted`` though the tool never ran (a third send then runs it).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import sys
import tempfile
import threading
import time
from typing import Any

import httpx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import s5_pg  # noqa: E402
from s5_server import Server  # noqa: E402

TOOL_S = 0.3


class Cycle:
    """One paused turn of the served agent, and the body that answers it."""

    def __init__(self, http: httpx.Client, url: str, cycle: str) -> None:
        send = {"data": {"message": {"role": "user", "content": [{"text": f"transfer {cycle}"}]}}, "init": {}}
        self.paused = http.post(url, json=send).json()["result"]
        held = [p for p in self.paused["message"]["content"] if (p.get("metadata") or {}).get("interrupt")]
        restart = {"toolRequest": held[0]["toolRequest"], "metadata": {"resumed": {"toolApproved": True}}}
        self.body = {
            "data": {"resume": {"restart": [restart]}},
            "init": {"snapshotId": self.paused["snapshotId"]},
        }


def runs(ledger: str, cycle: str) -> int:
    if not os.path.exists(ledger):
        return 0
    with open(ledger) as fh:
        return sum(1 for line in fh if line.startswith(cycle + " "))


def _post_into(into: dict[str, Any], url: str, body: dict[str, Any]) -> None:
    into.update(httpx.post(url, json=body, timeout=30).json())


def abort_as_it_finishes(server: Server, ledger: str, trials: int) -> int:
    url, bad = server.base + "/bench", 0
    with httpx.Client(timeout=30) as http:
        for trial in range(trials):
            cycle = f"f{trial}"  # an "f" cycle: the tool sleeps TOOL_S after its ledger line
            c = Cycle(http, url, cycle)
            got: dict[str, Any] = {}
            resume = threading.Thread(target=_post_into, args=(got, url, c.body))
            resume.start()
            while not runs(ledger, cycle):
                time.sleep(0.001)
            t_tool = time.monotonic()
            ask = {"data": {"sessionId": c.paused["sessionId"]}}
            child = http.post(url + "/getSnapshot", json=ask).json()["result"]["snapshotId"]
            delta = -0.045 + 0.05 * (trial % 101) / 100  # -45 to +5 ms, in 0.5 ms steps
            time.sleep(max(0.0, t_tool + TOOL_S + delta - time.monotonic()))
            was = (
                http.post(url + "/abort", json={"data": {"snapshotId": child}}).json()["result"].get("status")
            )
            resume.join()
            live = got["result"]
            row = http.post(url + "/getSnapshot", json={"data": {"snapshotId": child}}).json()["result"]
            again = http.post(url, json=c.body).json()["result"]
            text = "".join(p.get("text", "") for p in live["message"]["content"])
            line = (
                f"trial {trial:2d} abort at {delta * 1000:+5.1f} ms (child was {was}): live answer "
                f"{live['finishReason']} {text!r}, row {row.get('status')}, re-send {again['finishReason']}"
            )
            if live["finishReason"] == "stop" and again["finishReason"] != "stop":
                bad += 1
                retry = {**c.body, "data": {**c.body["data"], "retry": True}}
                retried = http.post(url, json=retry).json()["result"]
                line += (
                    f"  <-- retry: {retried['finishReason']}, tool runs for the answer: {runs(ledger, cycle)}"
                )
            print(line, flush=True)
    print(f"{bad} of {trials}: the live answer was stop, the identical answer sent again was not")
    return bad


def resend_after_early_disconnect(server: Server, ledger: str, trials: int) -> int:
    url, bad, rng = server.base + "/bench", 0, random.Random(1)
    seen: dict[str, int] = {}
    with httpx.Client(timeout=30) as http:
        for trial in range(trials):
            cycle = f"c{trial}"
            c = Cycle(http, url, cycle)
            body = json.dumps(c.body).encode()
            with socket.create_connection(("127.0.0.1", server.port)) as sock:
                head = "POST /bench HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                head += f"Content-Length: {len(body)}"
                sock.sendall(f"{head}\r\n\r\n".encode() + body)
                time.sleep(rng.uniform(0, 0.004))  # and gone: before (or while) the server claims the answer
            again = http.post(url, json=c.body).json()["result"]
            ran = runs(ledger, cycle)
            kind = f"re-send {again['finishReason']}, tool runs {ran}"
            seen[kind] = seen.get(kind, 0) + 1
            if again["finishReason"] == "aborted" and ran == 0:
                bad += 1
                third = http.post(url, json=c.body).json()["result"]
                print(
                    f"trial {trial}: the re-send answered aborted, yet the tool never ran; sent a third "
                    f"time: {third['finishReason']}, tool runs now {runs(ledger, cycle)}",
                    flush=True,
                )
    print(seen)
    return bad


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("race", choices=["abort-as-it-finishes", "resend-after-early-disconnect"])
    ap.add_argument("--store", choices=["sqlite", "postgres"], default="sqlite")
    ap.add_argument("--trials", type=int, default=101)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="nb-i11-race-")
    pg = s5_pg.Postgres() if args.store == "postgres" else None
    url = pg.store_url() if pg else f"sqlite:///{os.path.join(work, 'race.db')}"
    ledger = os.path.join(work, "ledger.txt")
    server = Server(url, ledger, work, "race", fault_tool_s=TOOL_S)
    try:
        server.wait_ready()
        run = abort_as_it_finishes if args.race == "abort-as-it-finishes" else resend_after_early_disconnect
        return 1 if run(server, ledger, args.trials) else 0
    finally:
        server.stop()
        if pg is not None:
            pg.stop()


if __name__ == "__main__":
    sys.exit(main())
