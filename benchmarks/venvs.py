"""One virtual environment per peer under ``benchmarks/.venvs/`` (git-ignored).

Each peer's environment is built from its pinned ``peers/<peer>/requirements.txt``
with the interpreter running the harness, and rebuilt only when that file
changes (a stamp holds its SHA-256). A peer that cannot be installed is
reported with pip's own error, never skipped silently.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
VENVS = os.path.join(HERE, ".venvs")
STAMP = ".requirements.sha256"


@dataclass
class PeerEnv:
    peer: str
    python: str | None
    error: str | None = None
    built: bool = False


def requirements(peer: str) -> str:
    return os.path.join(HERE, "peers", peer, "requirements.txt")


def _digest(path: str) -> str:
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


def _tail(text: str, lines: int = 25) -> str:
    kept = [ln for ln in text.splitlines() if ln.strip() and "is ignored: it is neither a file" not in ln]
    return "\n".join(kept[-lines:])


def ensure(peer: str, *, log: bool = True) -> PeerEnv:
    """The peer's interpreter, building its environment first if needed."""
    req = requirements(peer)
    if not os.path.exists(req):
        return PeerEnv(peer, None, error=f"no pinned requirements file at {req}")
    path = os.path.join(VENVS, peer)
    python = os.path.join(path, "bin", "python")
    stamp = os.path.join(path, STAMP)
    want = _digest(req)
    if os.path.exists(python) and os.path.exists(stamp):
        with open(stamp) as fh:
            if fh.read().strip() == want:
                return PeerEnv(peer, python)
    if log:
        print(
            f"[bench] building {os.path.relpath(path, HERE)} from {os.path.relpath(req, HERE)} ...",
            flush=True,
        )
    steps = [
        [sys.executable, "-m", "venv", "--clear", path],
        [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-r", req],
    ]
    for cmd in steps:
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            err = _tail(proc.stderr or proc.stdout) or f"exit code {proc.returncode}"
            return PeerEnv(
                peer, None, error=f"`{' '.join(os.path.basename(x) for x in cmd[:4])} ...` failed:\n{err}"
            )
    with open(stamp, "w") as fh:
        fh.write(want)
    return PeerEnv(peer, python, built=True)
