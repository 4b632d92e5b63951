"""Re-run the example notebooks and store their outputs, as nbval will see them.

Run after changing a notebook or what nb_agents prints:

    .venv/bin/python scripts/refresh_notebooks.py [notebooks/quickstart.ipynb ...]

Each notebook runs in a fresh kernel from a temp copy of notebooks/ (so the
files it writes stay out of the tree) in the isolated, offline, static
environment of tests/jupyter_env.py, exactly as tests/test_notebooks.py runs it.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path
from unittest import mock

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from jupyter_env import KERNEL_NAME, isolated_env  # noqa: E402


def refresh(path: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "notebooks"
        shutil.copytree(ROOT / "notebooks", work, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
        env = isolated_env(Path(tmp) / "jupyter")
        nb = nbformat.read(path, as_version=4)
        client = NotebookClient(
            nb,
            kernel_name=KERNEL_NAME,
            timeout=300,
            resources={"metadata": {"path": str(work)}},
            record_timing=False,  # no timestamps in the stored notebook: diffs show real changes only
            store_widget_state=False,  # static mode shows records: no widget state to keep
        )
        with mock.patch.dict(os.environ, env, clear=True):  # the kernel inherits this environment
            client.execute()
        for cell in nb.cells:
            cell.metadata.pop("execution", None)
        nbformat.write(nb, path)
    print(f"refreshed {path.relative_to(ROOT)}")


def main(argv: list[str]) -> int:
    paths = [Path(a).resolve() for a in argv] or sorted(
        p for p in (ROOT / "notebooks").glob("*.ipynb") if not p.name.startswith("_")
    )
    for path in paths:
        refresh(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
