"""py-spy on an S5 server process: the sampler, and a summary of its busy samples.

`Spy` attaches ``py-spy record --nonblocking`` (250 Hz, every thread) to the
server for the whole load; `write_profile` summarizes the raw samples (self time
by package and by leaf frame, inclusive time by frame, idle waits dropped) into
``results/profiles/S5-<store>-<generator>.txt``.
"""

from __future__ import annotations

import collections
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PROFILES = os.path.join(HERE, "results", "profiles")
IDLE_LEAVES = ("EpollSelector.select", "Condition.wait", "lock.acquire", "select (", "poll (")


def py_spy() -> str | None:
    return shutil.which("py-spy", path=os.path.dirname(sys.executable)) or shutil.which("py-spy")


class Spy:
    """``py-spy record`` on one process for `seconds`, raw samples to `raw`."""

    def __init__(self, exe: str, pid: int, seconds: float, raw: str) -> None:
        self.raw = raw
        cmd = [exe, "record", "--pid", str(pid), "--threads", "--nonblocking", "-r", "250"]
        cmd += ["-f", "raw", "-o", raw, "-d", str(int(seconds))]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def wait(self) -> None:
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _norm(frame: str) -> str:
    return re.sub(r"\((/[^()]*/(site-packages|python3\.\d+)/|" + re.escape(ROOT) + "/)", "(", frame)


def _package(frame: str) -> str:
    m = re.search(r"\(([^()/:]+)(/|\.py:)", frame)
    return m.group(1) if m else "?"


def spy_summary(raw_path: str, top: int = 25) -> str:
    """Busy samples of the server: self time by frame and by package, inclusive time by frame."""
    leaf: collections.Counter[str] = collections.Counter()
    pkg: collections.Counter[str] = collections.Counter()
    incl: collections.Counter[str] = collections.Counter()
    total = idle = 0
    threads: collections.Counter[str] = collections.Counter()
    with open(raw_path) as fh:
        for line in fh:
            stack, _, count = line.rstrip().rpartition(" ")
            frames = [_norm(f) for f in stack.split(";")]
            n = int(count)
            if frames[-1].startswith(IDLE_LEAVES):
                idle += n
                continue
            total += n
            threads["worker threads" if any("WorkerThread.run" in f for f in frames) else "main thread"] += n
            leaf[frames[-1]] += n
            pkg[_package(frames[-1])] += n
            for key in set(frames[1:]):
                incl[key] += n
    if not total:
        return "(no busy samples)"
    pct = lambda v: f"{100 * v / total:5.1f}%"  # noqa: E731
    out = [f"{total} busy samples (4 ms each, all threads), {idle} idle samples dropped"]
    out += [", ".join(f"{k}: {pct(v).strip()}" for k, v in threads.most_common()), ""]
    out.append("self time by package (leaf frame's top-level module):")
    out += [f"  {pct(v)}  {k}" for k, v in pkg.most_common(15)]
    out += ["", "self time (leaf frames):"]
    out += [f"  {pct(v)}  {k}" for k, v in leaf.most_common(top)]
    out += ["", "inclusive time (frames below 95%):"]
    out += [f"  {pct(v)}  {k}" for k, v in incl.most_common(top * 4) if v < 0.95 * total][: top * 2]
    return "\n".join(out) + "\n"


def write_profile(name: str, spy: Spy, head: list[str]) -> str:
    """The summary of `spy`'s samples in ``results/profiles/S5-<name>.txt``; its path, or why none."""
    if not os.path.exists(spy.raw):
        err = spy.proc.stderr.read().decode()[-1500:] if spy.proc.stderr else ""
        return f"py-spy wrote nothing: {err}"
    os.makedirs(PROFILES, exist_ok=True)
    path = os.path.join(PROFILES, f"S5-{name}.txt")
    with open(path, "w") as fh:
        fh.write("\n".join(head) + spy_summary(spy.raw))
    return os.path.relpath(path, ROOT)
