"""Genkit's real clients and server, installed once into ``tests/interop/.cache``.

* `ensure_js_client()`: npm ``genkit`` and ``@genkit-ai/express`` (pinned in
  ``js/package-lock.json``) installed with the machine's Node.js and ``npm ci`` into
  ``.cache/js``; the flow scripts (``*.mjs``) and the agent server (``*.cjs``) from
  ``js/`` are copied beside its ``node_modules`` so Node resolves ``genkit/...``.
* `ensure_browser_client()`: the page of ``examples/browser-client`` built: its npm
  packages (``genkit`` and ``esbuild-wasm``, pinned in its ``package-lock.json``)
  installed with ``npm ci`` into ``.cache/browser-client``, then ``src/app.js`` bundled
  with Genkit's client into ``dist/app.js`` (rebuilt on every call, so an edit shows).
* `ensure_genkit_python()`: PyPI ``genkit`` and ``genkit-fastapi`` (pinned in
  ``genkit_py/requirements.txt``, every transitive package included) in a virtualenv
  at ``.cache/genkit-py``.

Each install is skipped when a stamp file says the same lock file was installed with
the same runtime; a file lock keeps two test processes from installing at once.
What cannot be had (no Node.js or npm, no route to the package registries) raises
`Unavailable`; the fixtures turn that into a skip, or under ``CI=true`` into a
failure. Any other install error is a plain failure with the tool's output.

Run ``python tests/interop/toolchain.py`` to install both ahead of the tests and
print how long each took (``--fresh`` deletes the cache first: a cold install).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
CACHE = Path(os.environ.get("NB_AGENTS_INTEROP_CACHE", HERE / ".cache"))
JS_SOURCE = HERE / "js"
BROWSER_SOURCE = HERE.parent.parent / "examples" / "browser-client"
PY_SOURCE = HERE / "genkit_py"
INSTALL_TIMEOUT = 900.0  # seconds; a cold install takes well under a minute here
MIN_NODE_MAJOR = 18  # the client uses the global fetch and web streams

# what npm and pip print when the registry cannot be reached (as opposed to a broken lock)
_OFFLINE = re.compile(
    r"ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|EHOSTUNREACH|"
    r"NewConnectionError|Temporary failure in name resolution|Network is unreachable|"
    r"ConnectTimeout|Max retries exceeded|ProxyError|Name or service not known"
)


class Unavailable(Exception):
    """A tool or the network the install needs is missing on this machine."""


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("true", "1", "yes")


def _digest(*parts: bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part)
        h.update(b"\0")
    return h.hexdigest()


@contextlib.contextmanager
def _locked(name: str) -> Iterator[None]:
    CACHE.mkdir(parents=True, exist_ok=True)
    # the cache ignores itself, whatever the repository's .gitignore says
    (CACHE / ".gitignore").write_text("*\n")
    with open(CACHE / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _run(cmd: list[str], cwd: Path, what: str) -> None:
    """Run an installer; raise `Unavailable` when it could not reach the registry."""
    try:
        done = subprocess.run(
            cmd, cwd=cwd, capture_output=True, text=True, timeout=INSTALL_TIMEOUT, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise Unavailable(
            f"{what} did not finish in {INSTALL_TIMEOUT:.0f} s (no route to the registry?)"
        ) from exc
    if done.returncode == 0:
        return
    output = "\n".join(text.strip() for text in (done.stdout, done.stderr) if text.strip())[-6000:]
    if _OFFLINE.search(output):
        raise Unavailable(f"{what} could not reach the package registry:\n{output}")
    raise RuntimeError(f"{what} failed with exit status {done.returncode}:\n{output}")


def node_version() -> tuple[int, ...]:
    """The machine's Node.js version; `Unavailable` without node or npm."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        missing = " and ".join(n for n, p in [("node", node), ("npm", npm)] if p is None)
        raise Unavailable(
            f"{missing} not found on PATH (Genkit's JS client needs Node.js >= {MIN_NODE_MAJOR})"
        )
    out = subprocess.run([node, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    version = tuple(int(p) for p in re.findall(r"\d+", out)[:3])
    if not version or version[0] < MIN_NODE_MAJOR:
        raise Unavailable(f"Node.js {out} is too old: Genkit's JS client needs Node.js >= {MIN_NODE_MAJOR}")
    return version


def _npm_ci(source: Path, name: str, what: str) -> Path:
    """``npm ci`` of `source`'s package.json and lock into ``CACHE/name``, once per lock and Node major.

    No optional packages (the Firebase/Cloud telemetry plugin: 230 MB the clients never load;
    esbuild-wasm needs no per-platform binary), no install scripts (none of what remains needs one).
    """
    version = node_version()
    target = CACHE / name
    lock = (source / "package-lock.json").read_bytes()
    manifest = (source / "package.json").read_bytes()
    stamp = _digest(lock, manifest, str(version[0]).encode())
    stamp_file = target / ".installed"
    if not (stamp_file.exists() and stamp_file.read_text() == stamp and (target / "node_modules").is_dir()):
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        (target / "package.json").write_bytes(manifest)
        (target / "package-lock.json").write_bytes(lock)
        cmd = ["npm", "ci", "--omit=optional", "--ignore-scripts", "--no-audit", "--no-fund"]
        _run([*cmd, "--loglevel=error"], target, f"npm ci ({what})")
        stamp_file.write_text(stamp)
    return target


def ensure_js_client() -> Path:
    """The folder holding ``node_modules/genkit``, the JS flow scripts and server; installs once."""
    with _locked("js"):
        # @genkit-ai/core lists @cfworker/json-schema as optional but its schema module (which
        # the agent server loads) requires it, so package.json names it directly
        target = _npm_ci(JS_SOURCE, "js", "genkit JS client")
        # the scripts are copied on every call, so an edit takes effect without a reinstall
        for script in [*JS_SOURCE.glob("*.mjs"), *JS_SOURCE.glob("*.cjs")]:
            shutil.copyfile(script, target / script.name)
    return target


def ensure_browser_client() -> Path:
    """A folder holding the example page: ``index.html`` and the bundle ``dist/app.js``."""
    with _locked("browser-client"):
        target = _npm_ci(BROWSER_SOURCE, "browser-client", "browser client example")
        shutil.rmtree(target / "src", ignore_errors=True)
        shutil.copytree(BROWSER_SOURCE / "src", target / "src")
        for name in ("index.html", "build.mjs"):
            shutil.copyfile(BROWSER_SOURCE / name, target / name)
        _run(["npm", "run", "--silent", "build"], target, "npm run build (browser client example)")
    return target


def _venv_python(root: Path) -> Path:
    return root / "bin" / "python"


def ensure_genkit_python() -> Path:
    """The Python of a virtualenv holding Genkit 0.12 (client and FastAPI server); installs once."""
    target = CACHE / "genkit-py"
    requirements = PY_SOURCE / "requirements.txt"
    base = getattr(sys, "_base_executable", sys.executable)
    stamp = _digest(requirements.read_bytes(), sys.version.encode(), str(base).encode())
    with _locked("genkit-py"):
        stamp_file = target / ".installed"
        if stamp_file.exists() and stamp_file.read_text() == stamp and _venv_python(target).exists():
            return _venv_python(target)
        shutil.rmtree(target, ignore_errors=True)
        _run([sys.executable, "-m", "venv", str(target)], CACHE, "python -m venv (genkit virtualenv)")
        pip = [str(_venv_python(target)), "-m", "pip", "--disable-pip-version-check"]
        _run(
            [*pip, "install", "--quiet", "--retries", "2", "--timeout", "30", "-r", str(requirements)],
            CACHE,
            "pip install -r genkit_py/requirements.txt",
        )
        stamp_file.write_text(stamp)
    return _venv_python(target)


def main(argv: list[str]) -> int:
    """Install both and print the time each took."""
    if "--fresh" in argv:
        shutil.rmtree(CACHE, ignore_errors=True)
    for name, fn in [
        ("genkit JS client (npm ci)", ensure_js_client),
        ("browser client example (npm ci, esbuild)", ensure_browser_client),
        ("genkit Python venv", ensure_genkit_python),
    ]:
        t0 = time.monotonic()
        try:
            where = fn()
        except Unavailable as exc:
            print(f"{name}: unavailable: {exc}")
            continue
        print(f"{name}: {time.monotonic() - t0:.1f} s -> {where}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
