"""The example notebooks run under nbval in a real kernel.

Every ``notebooks/*.ipynb`` is one test here. notebooks/ is copied to a temp
folder (so what a notebook writes, an ``agents.db`` say, never lands in the work
tree) and ``pytest --nbval`` runs the copy in a subprocess, in the isolated
Jupyter environment of `jupyter_env`:
the ``python3`` kernel is this interpreter (the .venv's ipykernel), able to
import only what ``make demo`` installs (`demo_install`: so every example runs
under the demo's install, not just under the test extras),
``NB_AGENTS_STATIC=1`` makes nb_agents render deterministically, and no API key
reaches the kernel, so notebooks use their offline models. Each cell's fresh
output must equal the stored one after the masks in tests/nbval_sanitize.cfg
(UUIDs, ISO timestamps, memory addresses); a cell whose output cannot be
stable carries the cell tag ``nbval-ignore-output`` (a tag, not a comment a
reader would see). Fixtures of the test infrastructure live under tests/
(tests/browser/fixtures/), not among the examples.

The last tests prove the harness itself on notebooks they write: the kernel is
this interpreter, the masks apply, widgets display, keys are dropped, and a
changed output fails.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from demo_install import write_demo_kernelspec
from jupyter_env import KERNEL_NAME, MISSING_E2E_HINT, e2e_missing, in_ci, isolated_env

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
SANITIZE = Path(__file__).resolve().parent / "nbval_sanitize.cfg"
EXAMPLES = sorted(p for p in NOTEBOOKS.glob("*.ipynb") if not p.name.startswith("_"))
CELL_TIMEOUT = 300  # seconds; generous for a loaded 2-core CI machine


@pytest.fixture(scope="module", autouse=True)
def _needs_nbval() -> None:
    missing = e2e_missing("nbval", "ipykernel", "nbformat")
    if missing:
        message = f"nbval tests need {', '.join(missing)}: {MISSING_E2E_HINT}"
        if in_ci():
            pytest.fail(message)
        pytest.skip(message)


def run_nbval(notebooks: list[Path], workdir: Path, env: dict[str, str]) -> tuple[int, str, dict[str, str]]:
    """Run ``pytest --nbval`` on `notebooks` (inside `workdir`) in a subprocess.

    Returns the exit code, the combined output, and each nbval item's outcome
    ("passed", "failed", "error" or "skipped") by its name, e.g.
    ``"quickstart.ipynb::Cell 3"`` (nbval counts code cells only, from 0).
    """
    (workdir / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    report = workdir / "nbval-report.xml"
    cmd = [
        sys.executable, "-m", "pytest", "--nbval",
        "--nbval-kernel-name", KERNEL_NAME,
        "--nbval-sanitize-with", str(SANITIZE),
        "--nbval-cell-timeout", str(CELL_TIMEOUT),
        "-c", str(workdir / "pytest.ini"), "--rootdir", str(workdir),
        "-p", "no:cacheprovider", "-q", "-rfE", "--color=no", "--junitxml", str(report),
        *(str(p) for p in notebooks),
    ]  # fmt: skip
    proc = subprocess.run(
        cmd, cwd=workdir, env=env, capture_output=True, text=True, timeout=CELL_TIMEOUT * 4, check=False
    )
    output = proc.stdout + proc.stderr
    outcomes: dict[str, str] = {}
    if report.exists():
        for case in ET.parse(report).getroot().iter("testcase"):
            name = f"{case.get('classname', '')}::{case.get('name', '')}"
            found = {child.tag for child in case}
            outcome = next((tag for tag in ("failure", "error", "skipped") if tag in found), "passed")
            outcomes[name] = {"failure": "failed"}.get(outcome, outcome)
    return proc.returncode, output, outcomes


def demo_env(base: Path) -> dict[str, str]:
    """`isolated_env` whose ``python3`` kernel imports only what ``make demo`` installs."""
    env = isolated_env(base)
    write_demo_kernelspec(Path(env["JUPYTER_DATA_DIR"]) / "kernels" / KERNEL_NAME)
    return env


def needs_api_key(notebook: Path) -> bool:
    """A notebook that only makes sense on a real model says so in its metadata."""
    meta = json.loads(notebook.read_text(encoding="utf-8")).get("metadata", {})
    return bool(meta.get("nb_agents", {}).get("requires_api_key"))


@pytest.mark.parametrize("notebook", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_notebook(notebook: Path, tmp_path: Path) -> None:
    if needs_api_key(notebook):
        # isolated_env never passes a developer's keys to a test kernel, so such a
        # notebook would only replay its offline fallback: nothing worth comparing
        pytest.skip(f"{notebook.name} runs on a real model: it needs an API key, and test kernels get none")
    workdir = tmp_path / "notebooks"
    shutil.copytree(NOTEBOOKS, workdir, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    env = demo_env(tmp_path / "jupyter")
    code, output, outcomes = run_nbval([workdir / notebook.name], workdir, env)
    assert code == 0 and outcomes, f"nbval failed on notebooks/{notebook.name}:\n{output[-8000:]}"
    assert set(outcomes.values()) <= {"passed", "skipped"}, output[-8000:]


# --- the harness itself -------------------------------------------------------


def _notebook(cells: list[tuple[str, str]]) -> Any:
    """A notebook of code cells, each stored with the stream output `text`."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    for number, (source, text) in enumerate(cells, start=1):
        outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)] if text else []
        nb.cells.append(nbformat.v4.new_code_cell(source, execution_count=number, outputs=outputs))
    return nb


def _widget_cell(number: int) -> Any:
    import nbformat

    cell = nbformat.v4.new_code_cell(
        "import ipywidgets\nipywidgets.Button(description='Approve')", execution_count=number
    )
    data = {
        "text/plain": "Button(description='Approve', style=ButtonStyle())",
        # the model id differs on every run: nbval never compares this key
        "application/vnd.jupyter.widget-view+json": {
            "version_major": 2, "version_minor": 0, "model_id": "0" * 32
        },
    }  # fmt: skip
    cell.outputs = [nbformat.v4.new_output("execute_result", data=data, execution_count=number)]
    return cell


def test_harness_runs_this_interpreter_with_static_rendering_and_masks(tmp_path: Path) -> None:
    import nbformat

    good = _notebook(
        [
            ("import sys\nprint(sys.executable)", f"{sys.executable}\n"),
            ("import os\nprint(os.environ.get('NB_AGENTS_STATIC'))", "1\n"),
            (
                "print(sorted(k for k in os.environ if k.endswith('_API_KEY') or k == 'NB_AGENTS_MODEL'))",
                "[]\n",
            ),
            (
                "import uuid, datetime\n"
                "print(uuid.uuid4(), datetime.datetime.now(datetime.timezone.utc).isoformat())\n"
                "print(hex(id(object())))",
                # stored from another run: only the masks make these equal
                "0f5b7f0e-1c1a-4c4e-9d0e-3f2a1b0c9d8e 2024-01-31T23:59:59.123456+00:00\n0x7f3a2b1c4d50\n",
            ),
        ]
    )
    good.cells.append(_widget_cell(5))
    bad = _notebook([("print('the stored output says otherwise')", "something else entirely\n")])
    nbformat.write(good, tmp_path / "good.ipynb")
    nbformat.write(bad, tmp_path / "bad.ipynb")
    leaky = {"OPENAI_API_KEY": "sk-test-not-a-key", "NB_AGENTS_MODEL": "openai/gpt-4o-mini"}
    env = isolated_env(tmp_path / "jupyter", environ={**os.environ, **leaky})

    code, output, outcomes = run_nbval([tmp_path / "good.ipynb", tmp_path / "bad.ipynb"], tmp_path, env)

    good_cells = {name: o for name, o in outcomes.items() if name.startswith("good.ipynb")}
    assert len(good_cells) == 5 and set(good_cells.values()) == {"passed"}, output[-8000:]
    assert outcomes.get("bad.ipynb::Cell 0") == "failed", output[-8000:]
    assert code == 1
    assert "something else entirely" in output and "the stored output says otherwise" in output


def test_harness_kernel_imports_only_what_make_demo_installs(tmp_path: Path) -> None:
    import nbformat

    message = "No module named 'pytest'"  # as if it were not installed: make demo does not install it
    nb = _notebook(
        [
            ("import ipywidgets, markdown_it, nb_agents.notebook\nprint('ok')", "ok\n"),
            ("try:\n    import pytest\nexcept ModuleNotFoundError as exc:\n    print(exc)", f"{message}\n"),
        ]
    )
    nbformat.write(nb, tmp_path / "demo.ipynb")

    code, output, outcomes = run_nbval([tmp_path / "demo.ipynb"], tmp_path, demo_env(tmp_path / "jupyter"))

    assert code == 0 and set(outcomes.values()) == {"passed"} and len(outcomes) == 2, output[-8000:]
