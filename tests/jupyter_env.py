"""An isolated Jupyter environment for tests that start kernels or JupyterLab.

Both the nbval run (tests/test_notebooks.py) and the browser tests
(tests/browser/) start Jupyter processes. `isolated_env` gives them a folder of
their own for every place Jupyter reads or writes (config, data, runtime,
IPython profile, Lab settings and workspaces), so nothing in ``~/.jupyter``,
``~/.local/share/jupyter`` or ``~/.ipython`` leaks in, and registers a
``python3`` kernelspec there that runs *this* interpreter (the .venv's), which
wins over any other ``python3`` kernel on the machine.

The environment also makes notebooks deterministic and offline: it sets
``NB_AGENTS_STATIC=1`` (unless told otherwise) and drops the variables that
would make nb_agents call a real model (``NB_AGENTS_MODEL``, ``*_API_KEY``,
``OLLAMA_HOST``), so a developer's own keys never reach a test kernel.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path

__all__ = ["KERNEL_NAME", "MISSING_E2E_HINT", "e2e_missing", "in_ci", "isolated_env"]

KERNEL_NAME = "python3"
"""The kernelspec name registered in the isolated data dir (the notebooks' default)."""

MISSING_E2E_HINT = "install the e2e extra: .venv/bin/pip install -e '.[e2e]'"

# Variables that point Jupyter or IPython somewhere else, or pick a real model.
_DROPPED = (
    "JUPYTER_PATH",
    "JUPYTER_CONFIG_PATH",
    "JUPYTERLAB_DIR",
    "JUPYTERLAB_SETTINGS_DIR",
    "JUPYTERLAB_WORKSPACES_DIR",
    "JUPYTER_TOKEN",
    "JUPYTER_NO_CONFIG",
    "NB_AGENTS_MODEL",
    "OLLAMA_HOST",
)

# JupyterLab user settings that keep a test run quiet and every cell in the DOM:
# no news or update toasts over the notebook, and no windowed (virtual) rendering
# that would leave cells below the fold out of the page.
_LAB_SETTINGS: dict[str, dict[str, object]] = {
    "@jupyterlab/apputils-extension/notification": {"checkForUpdates": False, "fetchNews": "false"},
    "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
}


def in_ci() -> bool:
    """Whether we run in CI (``CI=true``), where a missing tool is an error, not a skip."""
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def e2e_missing(*modules: str) -> list[str]:
    """The names among `modules` that cannot be imported (the e2e extra is not installed)."""
    import importlib.util

    return [name for name in modules if importlib.util.find_spec(name) is None]


def isolated_env(
    base: Path,
    *,
    python: str = sys.executable,
    static: bool = True,
    environ: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Create Jupyter's folders under `base` and return the environment that uses them.

    Args:
        base: An empty folder (a pytest ``tmp_path``) that will hold ``config/``,
            ``data/``, ``runtime/``, ``ipython/`` and ``tmp/`` (its ``TMPDIR``).
        python: The interpreter the ``python3`` kernel runs (default: this one).
        static: Set ``NB_AGENTS_STATIC=1`` so nb_agents renders deterministically.
        environ: The environment to start from (default: ``os.environ``).

    Returns:
        A full environment mapping for `subprocess` (PATH and the rest kept).

    Example:
        >>> env = isolated_env(tmp_path)
        >>> subprocess.run([sys.executable, "-m", "jupyter", "kernelspec", "list"], env=env)
    """
    source = os.environ if environ is None else environ
    env = {
        key: value for key, value in source.items() if key not in _DROPPED and not key.endswith("_API_KEY")
    }
    dirs = {
        "JUPYTER_CONFIG_DIR": base / "config",
        "JUPYTER_DATA_DIR": base / "data",
        "JUPYTER_RUNTIME_DIR": base / "runtime",
        "IPYTHONDIR": base / "ipython",
        # a kernel stopped by a test runs no finalizers: what it puts in a temp
        # directory (a notebook's scratch store) stays under `base`
        "TMPDIR": base / "tmp",
    }
    for name, path in dirs.items():
        path.mkdir(parents=True, exist_ok=True)
        env[name] = str(path)
    # In a venv Jupyter prefers the env's own folders to the user's; we want ours first.
    env["JUPYTER_PREFER_ENV_PATH"] = "0"
    # ~/.local/share/jupyter and ~/.local site-packages stay out.
    env["PYTHONNOUSERSITE"] = "1"
    env["NB_AGENTS_STATIC"] = "1" if static else "0"
    _write_kernelspec(dirs["JUPYTER_DATA_DIR"] / "kernels" / KERNEL_NAME, python)
    _write_lab_settings(dirs["JUPYTER_CONFIG_DIR"] / "lab" / "user-settings")
    return env


def _write_kernelspec(folder: Path, python: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    spec = {
        "argv": [python, "-Xfrozen_modules=off", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (nb_agents tests)",
        "language": "python",
        # ipykernel takes CurveZMQ keys from the kernel manager (transport_encryption=auto)
        "metadata": {"debugger": True, "supported_encryption": ["curve"]},
    }
    (folder / "kernel.json").write_text(json.dumps(spec, indent=1), encoding="utf-8")


def _write_lab_settings(folder: Path) -> None:
    for plugin, values in _LAB_SETTINGS.items():
        package, _, name = plugin.rpartition("/")
        target = folder / package / f"{name}.jupyterlab-settings"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(values, indent=1), encoding="utf-8")
