"""What `make demo` installs covers every example notebook, and Binder installs the same.

The notebooks themselves run under the demo's install in tests/test_notebooks.py
(its kernel can import only what `demo_install.demo_distributions` lists); these
tests check the list and that Binder stays in step with the Makefile.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from demo_install import blocked_modules, demo_distributions, demo_extras

ROOT = Path(__file__).resolve().parent.parent


def _name(requirement: str) -> str:
    return re.sub(r"[-_.]+", "-", re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0]).lower()


def test_the_demo_installs_jupyterlab_and_the_mcp_sdk_and_no_test_tooling() -> None:
    assert demo_extras() == ["jupyter", "mcp", "otel"]
    installed = demo_distributions()
    assert {"nb-agents", "jupyterlab", "ipykernel", "ipywidgets", "mcp"} <= installed
    assert not {"pytest", "psycopg", "ruff", "nbval", "playwright"} & installed
    blocked = blocked_modules()
    assert {"pytest", "psycopg", "playwright"} <= blocked and not {"mcp", "nb_agents", "anywidget"} & blocked


def test_binder_installs_what_the_demo_installs() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    wanted = {_name(r) for extra in demo_extras() for r in project["optional-dependencies"][extra]}
    lines = (ROOT / "binder" / "requirements.txt").read_text(encoding="utf-8").splitlines()
    binder = {_name(line) for line in lines if line.strip() and not line.lstrip().startswith("#")}
    assert wanted <= binder, f"binder/requirements.txt lacks {sorted(wanted - binder)}"
