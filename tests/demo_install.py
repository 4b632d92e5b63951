"""What `make demo` installs, and a kernel that can import nothing else.

`make demo` installs nb_agents with some extras (the Makefile's demo install
line, e.g. ``pip install -e ".[jupyter,mcp]"``). `demo_distributions` reads
that line and resolves, from pyproject.toml and the installed packages'
metadata, every distribution such an install brings in. `blocked_modules` is
the rest: the top-level modules of every installed distribution outside that
set (pytest, psycopg, ruff, ...), which this test environment has but a demo
environment would not.

`write_demo_kernelspec` registers a ``python3`` kernel that starts through
this module (``python tests/demo_install.py -f <connection file>``): it puts a
finder first on ``sys.meta_path`` that refuses those modules, then runs
ipykernel. So tests/test_notebooks.py runs every example notebook as it runs
after ``make demo``: a notebook that needs an extra the demo leaves out fails
there, as it would for a person ("No module named 'mcp'").
"""

from __future__ import annotations

import json
import re
import sys
import tomllib
from collections.abc import Iterable, Sequence
from importlib import metadata
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec, PathFinder
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = [
    "BLOCKED_ENV",
    "blocked_modules",
    "demo_distributions",
    "demo_extras",
    "write_demo_kernelspec",
]

ROOT = Path(__file__).resolve().parent.parent
BLOCKED_ENV = "NB_AGENTS_TEST_BLOCKED_MODULES"
"""The environment variable that gives the demo kernel its blocked modules (comma-separated)."""

# what every virtual environment has besides what pip installs into it
_VENV = {"pip", "setuptools", "wheel"}
_INSTALL = re.compile(r"pip install\b.*?-e\s+\"?\.\[([^\]]*)\]")


def demo_extras(makefile: Path = ROOT / "Makefile") -> list[str]:
    """The extras of the Makefile's demo install (the recipe of ``$(DEMO_STAMP)``)."""
    lines = makefile.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("$(DEMO_STAMP):"))
    recipe = []
    for line in lines[start + 1 :]:
        if not line.startswith("\t"):
            break
        recipe.append(line)
    found = [m.group(1) for line in recipe if (m := _INSTALL.search(line))]
    if len(found) != 1:
        raise ValueError(f"expected one editable install in the demo recipe, found {recipe}")
    return sorted(e.strip() for e in found[0].split(",") if e.strip())


def _canon(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirements(reqs: Iterable[str], extra: str) -> list[tuple[str, list[str]]]:
    """The (name, extras) of each requirement that holds with `extra` ("" for the base install)."""
    from packaging.requirements import Requirement

    out = []
    for text in reqs:
        req = Requirement(text)
        if req.marker is None or req.marker.evaluate({"extra": extra}):
            out.append((req.name, sorted(req.extras)))
    return out


def demo_distributions(extras: Sequence[str] | None = None) -> set[str]:
    """Every distribution (canonical names) installed by nb_agents with `extras` (default: the demo's)."""
    extras = demo_extras() if extras is None else extras
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    own = _canon(project["name"])
    seen: dict[str, set[str]] = {}  # each distribution, with the extras already followed
    todo: list[tuple[str, list[str]]] = [(own, list(extras))]
    while todo:
        name, wanted = todo.pop()
        name = _canon(name)
        first = name not in seen
        done = seen.setdefault(name, set())
        follow = ([""] if first else []) + [e for e in wanted if e not in done]
        done.update(wanted)
        for extra in follow:
            if name == own:  # from pyproject.toml: the metadata installed may be older
                reqs = project["optional-dependencies"][extra] if extra else project["dependencies"]
                todo.extend(_requirements(reqs, ""))
                continue
            try:
                reqs = metadata.requires(name) or []
            except metadata.PackageNotFoundError:
                break  # an optional dependency not installed here: nothing of it to block
            todo.extend(_requirements(reqs, extra))
    return set(seen) | _VENV


def blocked_modules(allowed: set[str] | None = None) -> set[str]:
    """The top-level modules of installed distributions that are not in `allowed` (default: the demo's)."""
    allowed = demo_distributions() if allowed is None else allowed
    blocked = set()
    for module, dists in metadata.packages_distributions().items():
        if not any(_canon(d) in allowed for d in dists):
            blocked.add(module)
    return blocked - set(sys.stdlib_module_names)


class _Blocker(MetaPathFinder):
    """Python's path finder, blind to the blocked modules (as if they were not installed)."""

    def __init__(self, blocked: set[str]) -> None:
        self.blocked = blocked

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname.partition(".")[0] in self.blocked:
            return None
        return PathFinder.find_spec(fullname, path, target)

    def invalidate_caches(self) -> None:
        PathFinder.invalidate_caches()

    def find_distributions(self, *args: Any, **kwargs: Any) -> Iterable[metadata.Distribution]:
        # the metadata stays readable (importlib.metadata.version): only importing is refused
        return PathFinder.find_distributions(*args, **kwargs)


def write_demo_kernelspec(folder: Path, python: str = sys.executable) -> None:
    """Make the kernelspec in `folder` start its kernel through this module (the demo's imports only)."""
    spec_file = folder / "kernel.json"
    spec = json.loads(spec_file.read_text(encoding="utf-8"))
    spec["argv"] = [python, "-Xfrozen_modules=off", str(Path(__file__).resolve()), "-f", "{connection_file}"]
    spec["display_name"] = "Python 3 (nb_agents tests, make demo's install)"
    spec["env"] = {**spec.get("env", {}), BLOCKED_ENV: ",".join(sorted(blocked_modules()))}
    spec_file.write_text(json.dumps(spec, indent=1), encoding="utf-8")


def _main() -> None:
    import os
    import runpy

    sys.path.remove(str(Path(__file__).resolve().parent))  # the kernel sees no test modules
    blocked = {m for m in os.environ.pop(BLOCKED_ENV, "").split(",") if m}
    leaked = sorted(m for m in sys.modules if m.partition(".")[0] in blocked)
    if leaked:
        raise SystemExit(f"imported before the blocker was in place: {leaked}")
    sys.meta_path[:] = [_Blocker(blocked) if f is PathFinder else f for f in sys.meta_path]
    sys.argv = ["ipykernel_launcher", *sys.argv[1:]]
    runpy.run_module("ipykernel_launcher", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    _main()
