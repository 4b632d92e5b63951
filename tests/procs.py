"""Helper processes of the multi-process tests: run a tests/proc_*.py script, read what it printed.

Each script is a fresh interpreter (this one's), so what it does goes through
the store only, as another kernel or server would.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def run(script: str, *args: str) -> subprocess.Popen[str]:
    """Start ``python tests/<script> <args>``, its output piped."""
    return subprocess.Popen(
        [sys.executable, str(HERE / script), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def finish(proc: subprocess.Popen[str]) -> list[str]:
    """The words the process printed; it must exit 0 within a minute (its stderr is the failure)."""
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return out.split()


def shared_store(kind: str, tmp_path: Path, name: str) -> str:
    """Where processes share a store: a SQLite file in `tmp_path`, or a fresh PostgreSQL database."""
    if kind == "sqlite":
        return str(tmp_path / name)
    from pg import fresh_dsn  # the suite's throwaway PostgreSQL (skips without it, fails in CI)

    return fresh_dsn()
