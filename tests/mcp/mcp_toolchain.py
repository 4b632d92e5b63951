"""The npm MCP servers the tests run, installed once into ``tests/mcp/.cache``.

`ensure_servers()` installs ``@modelcontextprotocol/server-everything`` and
``@modelcontextprotocol/server-filesystem``, pinned in ``js/package-lock.json``,
with the machine's Node.js and ``npm ci`` (the way tests/interop installs
Genkit's JS client, with its helpers), and returns the folder holding
``node_modules``. A stamp file skips the install when the same lock file was
installed with the same Node.js major version; a file lock keeps two test
processes from installing at once. Without Node.js or npm, or without a route
to the registry, it raises `toolchain.Unavailable`: the fixtures skip, or under
``CI=true`` fail.

Run ``python tests/mcp/mcp_toolchain.py`` to install ahead of the tests.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from interop import toolchain  # noqa: E402

CACHE = Path(os.environ.get("NB_AGENTS_MCP_CACHE", HERE / ".cache"))
JS_SOURCE = HERE / "js"
MIN_NODE_MAJOR = 20  # what the servers' package.json files ask for

Unavailable = toolchain.Unavailable
in_ci = toolchain.in_ci


def ensure_servers() -> Path:
    """The folder whose ``node_modules`` holds both servers; installs once."""
    version = toolchain.node_version()
    if version[0] < MIN_NODE_MAJOR:
        raise Unavailable(
            f"Node.js {version[0]} is too old: the MCP servers need Node.js >= {MIN_NODE_MAJOR}"
        )
    target = CACHE / "js"
    lock = (JS_SOURCE / "package-lock.json").read_bytes()
    manifest = (JS_SOURCE / "package.json").read_bytes()
    stamp = toolchain._digest(lock, manifest, str(version[0]).encode())
    CACHE.mkdir(parents=True, exist_ok=True)
    (CACHE / ".gitignore").write_text("*\n")
    with open(CACHE / "js.lock", "w") as lock_file:
        import fcntl

        fcntl.flock(lock_file, fcntl.LOCK_EX)
        stamp_file = target / ".installed"
        if not (
            stamp_file.exists() and stamp_file.read_text() == stamp and (target / "node_modules").is_dir()
        ):
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir(parents=True)
            (target / "package.json").write_bytes(manifest)
            (target / "package-lock.json").write_bytes(lock)
            cmd = ["npm", "ci", "--omit=optional", "--ignore-scripts", "--no-audit", "--no-fund"]
            toolchain._run([*cmd, "--loglevel=error"], target, "npm ci (MCP servers)")
            stamp_file.write_text(stamp)
    return target


def server_command(root: Path, package: str, *args: str) -> list[str]:
    """The command line that starts `package` (``server-everything``, ``server-filesystem``)."""
    node = shutil.which("node")
    assert node is not None
    entry = root / "node_modules" / "@modelcontextprotocol" / package / "dist" / "index.js"
    return [node, str(entry), *args]


if __name__ == "__main__":
    import time

    t0 = time.monotonic()
    where = ensure_servers()
    print(f"MCP servers: {time.monotonic() - t0:.1f} s -> {where}")
