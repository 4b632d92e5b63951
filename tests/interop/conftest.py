"""Fixtures for the interop tests: Genkit's real clients and server, installed once.

``genkit_js`` and ``genkit_python`` install on first use (`toolchain`); without Node.js,
npm or a route to the package registries they skip with the reason, except under
``CI=true``, where that is a failure. `run_json` runs a flow script and returns the
JSON object it prints.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from . import toolchain

SCRIPT_TIMEOUT = 180.0  # seconds; a bound, never a timing assertion


def _need(install: Callable[[], Path]) -> Path:
    try:
        return install()
    except toolchain.Unavailable as exc:
        if toolchain.in_ci():
            pytest.fail(f"CI=true and {exc}", pytrace=False)
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def genkit_js() -> Path:
    """The folder with npm genkit installed and the JS flow scripts beside it."""
    return _need(toolchain.ensure_js_client)


@pytest.fixture(scope="session")
def genkit_python() -> Path:
    """The Python of the virtualenv holding PyPI genkit 0.12.0 and genkit-fastapi."""
    return _need(toolchain.ensure_genkit_python)


def run_json(cmd: list[str], *, cwd: Path | None = None) -> dict[str, Any]:
    """Run a flow script; the last line it prints is one JSON object."""
    try:
        done = subprocess.run(
            [str(c) for c in cmd],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=SCRIPT_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(
            f"{cmd[1]} did not finish within {SCRIPT_TIMEOUT:.0f} s:\n{exc.stdout}\n{exc.stderr}"
        ) from exc
    assert done.returncode == 0, (
        f"{cmd[1]} exited with {done.returncode}:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    )
    lines = done.stdout.strip().splitlines()
    assert lines, f"{cmd[1]} printed nothing:\n{done.stderr[-4000:]}"
    result: dict[str, Any] = json.loads(lines[-1])
    return result
