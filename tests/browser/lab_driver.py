"""Driving a real JupyterLab in headless Chromium: the server and the page.

`LabServer` runs one JupyterLab on 127.0.0.1 (a free port, a known token, no
browser, a temp root folder, Jupyter's folders isolated by `jupyter_env`) and
talks to its REST API. `LabPage` wraps a Playwright page with the moves a
person makes: open a notebook, Run > Run All Cells, run one cell, type into a
widget text field and click a widget button by their labels, read a cell's output, Kernel > Restart Kernel,
and wait for the kernel to be idle. Every wait that times out saves a
screenshot, the page's HTML and its console log under the artifacts folder and
fails with an `AssertionError` naming the screenshot.

Cells are counted from 0 over all cells (markdown included), as they appear.

Example (inside a test that takes the ``lab`` fixture from conftest.py):
    >>> lab.open_notebook(FIXTURES / "smoke.ipynb")
    >>> lab.run_all()
    >>> lab.fill("Note", "ship it", cell=1)
    >>> lab.click_button("Approve", cell=1)
    >>> lab.wait_for_output("clicked: approved", cell=1)
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, NoReturn

import httpx
from lab_scripts import KERNEL_READY, RESTARTED, RUNS_DONE, WATCH_RUNS, WATCH_STATUS
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Locator, Page

__all__ = ["CHROMIUM_ARGS", "TIMEOUT_MS", "LabPage", "LabServer"]

CHROMIUM_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
    # Without these Chromium keeps dialing out, and the closed network refuses it.
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
"""Flags for Debian's Chromium, headless, as root, on a machine with no outside network."""

TIMEOUT_MS = 60_000
"""How long any one wait may take: generous, for a busy 2-core CI machine."""

# The notebook on show (other tabs are hidden by Lumino, not removed).
_PANEL = ".jp-NotebookPanel:not(.lm-mod-hidden)"


class LabServer:
    """One JupyterLab process on 127.0.0.1, serving a temp root folder.

    Example:
        >>> server = LabServer.start(tmp / "lab", isolated_env(tmp / "jupyter", static=False))
        >>> server.api("GET", "/api/status")["started"]
        >>> server.stop()
    """

    def __init__(self, process: subprocess.Popen[bytes], url: str, token: str, root: Path, log: Path):
        self.process = process
        self.url = url
        self.token = token
        self.root = root
        self.log = log
        self.settings_dir: Path | None = None  # JupyterLab's user settings, when the caller knows them
        self._http = httpx.Client(base_url=url, headers={"Authorization": f"token {token}"}, timeout=30)

    @classmethod
    def start(
        cls, base: Path, env: dict[str, str], *, timeout: float = 180.0, server_extension: bool = True
    ) -> LabServer:
        """Start JupyterLab with its root and log under `base`; wait until /api/status answers.

        `server_extension`: enable nb_agents' Jupyter server extension, as a regular install
        does (an editable one does not: False starts JupyterLab as it runs there).
        """
        root = base / "root"
        root.mkdir(parents=True, exist_ok=True)
        token = os.urandom(16).hex()
        for attempt in range(3):  # the free port may be taken between probe and bind
            port = _free_port()
            log = base / f"jupyterlab-{attempt}.log"
            cmd = [
                sys.executable, "-m", "jupyterlab",
                "--no-browser", "--ip=127.0.0.1", f"--port={port}", "--port-retries=0",
                f"--IdentityProvider.token={token}",
                f"--ServerApp.root_dir={root}",
                "--ServerApp.terminals_enabled=False",
                # ends by itself if a crashed test run ever leaves it behind
                "--ServerApp.shutdown_no_activity_timeout=1800",
                "--LabApp.news_url=None",
                "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
                # CurveZMQ-encrypted kernel sockets: no "TCP without encryption" warning per kernel
                "--KernelManager.transport_encryption=auto",
                # what a regular install enables through its config file (an editable one has none)
                f"--ServerApp.jpserver_extensions=nb_agents.jupyter_extension={server_extension}",
            ]  # fmt: skip
            if os.geteuid() == 0:
                cmd.append("--allow-root")
            with log.open("wb") as sink:
                process = subprocess.Popen(
                    cmd, cwd=root, env=env, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True
                )
            server = cls(process, f"http://127.0.0.1:{port}", token, root, log)
            if server._wait_ready(timeout):
                return server
            server.stop()
            if "already in use" not in _tail(log):
                break
        raise RuntimeError(f"JupyterLab did not start within {timeout:.0f}s; its log ({log}):\n{_tail(log)}")

    def _wait_ready(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            try:
                if self._http.get("/api/status").status_code == 200:
                    return True
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        return False

    def api(self, method: str, path: str) -> Any:
        """Call the server's REST API (token sent); the decoded JSON, or None for 204."""
        response = self._http.request(method, path)
        response.raise_for_status()
        return response.json() if response.content else None

    def add_notebook(self, source: Path, folder: str) -> str:
        """Copy `source` into ``<root>/<folder>/`` and return its path relative to the root."""
        target = self.root / folder / source.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        return target.relative_to(self.root).as_posix()

    def lab_url(self, path: str) -> str:
        """The Lab URL that opens `path` in a fresh workspace (``reset`` skips restoring old tabs)."""
        return f"{self.url}/lab/tree/{path}?reset&token={self.token}"

    def shutdown_kernels(self) -> None:
        """End every session and kernel, so the next test starts from none."""
        for session in self._list("/api/sessions"):
            self._http.delete(f"/api/sessions/{session['id']}")
        for kernel in self._list("/api/kernels"):
            self._http.delete(f"/api/kernels/{kernel['id']}")

    def _list(self, path: str, timeout: float = 30) -> Any:
        """GET a listing, waiting out the 500 jupyter_server answers while a kernel is still starting.

        A kernel is in the manager's table before its launch has finished, and its model (its
        ``last_activity``) only exists afterwards: listing in that window fails on the server.
        """
        deadline = time.monotonic() + timeout
        while True:
            response = self._http.get(path)
            if response.status_code < 500 or time.monotonic() > deadline:
                response.raise_for_status()
                return response.json()
            time.sleep(0.2)

    def stop(self) -> None:
        """Shut down kernels and the server (politely, then by force)."""
        if self.process.poll() is None:
            try:
                self.shutdown_kernels()
            except (httpx.HTTPError, ValueError):
                pass
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self._http.close()


class LabPage:
    """A Playwright page showing JupyterLab, with the moves a notebook user makes.

    Args:
        page: A fresh Playwright page.
        server: The running `LabServer`.
        artifacts: Where screenshots of failures go.
        name: A file-safe name for this test (notebook folder and artifact names).
    """

    def __init__(self, page: Page, server: LabServer, artifacts: Path, name: str):
        self.page = page
        self.server = server
        self.artifacts = artifacts
        self.name = name
        self.console: list[str] = []
        self.saved: list[Path] = []  # screenshots taken so far
        page.set_default_timeout(TIMEOUT_MS)
        page.on("console", lambda message: self.console.append(f"[{message.type}] {message.text}"))
        page.on("pageerror", lambda error: self.console.append(f"[pageerror] {error}"))

    # --- locating ---------------------------------------------------------------

    @property
    def notebook(self) -> Locator:
        """The notebook panel on show."""
        return self.page.locator(_PANEL)

    def cell(self, index: int) -> Locator:
        """The `index`-th cell (from 0, markdown cells included)."""
        return self.notebook.locator(".jp-Notebook .jp-Cell").nth(index)

    def _outputs(self, cell: int | None) -> Locator:
        scope = self.notebook if cell is None else self.cell(cell)
        return scope.locator(".jp-OutputArea-output")

    # --- moves ------------------------------------------------------------------

    def open_notebook(self, source: Path) -> str:
        """Copy `source` into the server's root, open it in Lab and wait for its kernel to be idle.

        Returns its path relative to the server's root (for `reopen` and the REST API).
        """
        path = self.server.add_notebook(source, self.name)
        self.page.goto(self.server.lab_url(path))
        self._wait(lambda: self.notebook.wait_for(), f"the notebook {path} did not open")
        self._wait(
            lambda: self.page.wait_for_function(KERNEL_READY, arg=_PANEL),
            f"the kernel of {path} did not start and become idle",
        )
        return path

    def menu(self, menu: str, command: str) -> None:
        """Click `menu` in the menu bar, then its entry for the Lab command id `command`."""
        self._wait(
            lambda: self.page.locator(
                "#jp-menu-panel .lm-MenuBar-item", has_text=re.compile(f"^{menu}$")
            ).click(),
            f"no '{menu}' menu",
        )
        self._wait(
            lambda: self.page.locator(f".lm-Menu-item[data-command='{command}']").click(),
            f"no entry for the command '{command}' in the '{menu}' menu",
        )

    def run_all(self) -> None:
        """Run > Run All Cells, then wait until every code cell has run and the kernel is idle.

        The kernel is idle first: a Run All sent while it still connects can be lost (seen once in
        CI under load: every cell left unrun, the kernel idle).
        """
        self.wait_until_idle()
        self.page.evaluate(WATCH_RUNS, _PANEL)
        self.menu("Run", "runmenu:run-all")
        self._wait_for_runs(None)

    def run_cell(self, index: int) -> None:
        """Select cell `index`, Run > Run Selected Cell..., and wait until it has run."""
        self._wait(lambda: self.cell(index).locator(".jp-InputPrompt").click(), f"no cell {index}")
        self.page.evaluate(WATCH_RUNS, _PANEL)
        self.menu("Run", "notebook:run-cell")
        self._wait_for_runs([index])

    def restart_kernel(self) -> None:
        """Kernel > Restart Kernel..., confirm, and wait until the new kernel is idle."""
        self.page.evaluate(WATCH_STATUS, _PANEL)
        self.menu("Kernel", "kernelmenu:restart")
        self._wait(lambda: self.page.locator(".jp-Dialog .jp-mod-accept").click(), "no restart dialog")
        self._wait(
            lambda: self.page.wait_for_function(RESTARTED, arg=_PANEL),
            "the kernel did not restart and come back idle",
        )

    def wait_until_idle(self) -> None:
        """Wait until the notebook has a kernel and it is idle."""
        self._wait(
            lambda: self.page.wait_for_function(KERNEL_READY, arg=_PANEL), "the kernel did not become idle"
        )

    def click_button(self, label: str, *, cell: int | None = None) -> None:
        """Click the widget button named exactly `label` in an output (of `cell`, if given).

        nb_agents' buttons are named by their words alone (no icon glyph leads the name).
        """
        buttons = self._outputs(cell).get_by_role("button", name=label, exact=True)
        where = "the outputs" if cell is None else f"the output of cell {cell}"
        self._wait(lambda: buttons.first.wait_for(), f"no button '{label}' in {where}")
        if buttons.count() > 1:
            self.fail(f"{buttons.count()} buttons '{label}' in {where}; pass cell= to pick one")
        self._wait(lambda: buttons.click(), f"could not click the button '{label}' in {where}")

    def wait_for_no_button(self, label: str, *, cell: int | None = None) -> None:
        """Wait until no button named exactly `label` shows in an output (of `cell`, if given)."""
        buttons = self._outputs(cell).get_by_role("button", name=label, exact=True)
        where = "the outputs" if cell is None else f"the output of cell {cell}"
        self._wait(lambda: buttons.first.wait_for(state="hidden"), f"the button '{label}' stayed in {where}")

    def fill(self, label: str, text: str, *, cell: int | None = None) -> None:
        """Type `text` into the widget text field labelled `label` in an output (of `cell`, if given)."""
        field = self._outputs(cell).get_by_label(label, exact=True)
        where = "the outputs" if cell is None else f"the output of cell {cell}"
        self._wait(lambda: field.first.wait_for(), f"no text field '{label}' in {where}")
        if field.count() > 1:
            self.fail(f"{field.count()} text fields '{label}' in {where}; pass cell= to pick one")
        # Typed key by key, like a person: the widget sends its value to the kernel as it changes.
        self._wait(lambda: field.press_sequentially(text), f"could not type into '{label}' in {where}")
        self._wait(lambda: field.press("Tab"), f"could not leave '{label}' in {where}")

    def press(self, label: str, keys: str, *, cell: int | None = None) -> None:
        """Focus the text box labelled `label` in an output and press `keys` (e.g. "Enter", "Shift+Enter")."""
        box = self._outputs(cell).get_by_label(label, exact=True)
        where = "the outputs" if cell is None else f"the output of cell {cell}"
        self._wait(lambda: box.first.wait_for(), f"no text box '{label}' in {where}")
        self._wait(lambda: box.first.press(keys), f"could not press {keys} in '{label}' in {where}")

    def type_into(self, label: str, text: str, *, cell: int | None = None) -> None:
        """Type `text` key by key into the text box labelled `label` (staying in it)."""
        box = self._outputs(cell).get_by_label(label, exact=True)
        where = "the outputs" if cell is None else f"the output of cell {cell}"
        self._wait(lambda: box.first.wait_for(), f"no text box '{label}' in {where}")
        self._wait(lambda: box.first.press_sequentially(text), f"could not type into '{label}' in {where}")

    def save(self) -> None:
        """File > Save Notebook, and wait until the notebook is no longer marked dirty."""
        self.menu("File", "docmanager:save")
        self._wait(
            lambda: self.page.wait_for_function(
                "(sel) => { const p = document.querySelector(sel);"
                " return p && !p.classList.contains('jp-mod-dirty')"
                " && !document.querySelector('.jp-mod-current.jp-mod-dirty'); }",
                arg=_PANEL,
            ),
            "the notebook was not saved",
        )

    def reopen(self, path: str) -> None:
        """Load the page again with the notebook at `path` (relative to the server's root) open."""
        self.page.goto(self.server.lab_url(path))
        self._wait(lambda: self.notebook.wait_for(), f"the notebook {path} did not open")

    def shot(self, label: str, *, cell: int | None = None, output: bool = False) -> Path | None:
        """Save a reference screenshot when ``NB_AGENTS_SCREENSHOTS`` names a folder (else nothing).

        With `output`, only the cell's output area (all of it, however tall), not its code.
        """
        folder = os.environ.get("NB_AGENTS_SCREENSHOTS")
        if not folder:
            return None
        target = Path(folder) / f"{self.name}-{label}.png"
        target.parent.mkdir(parents=True, exist_ok=True)
        time.sleep(0.5)  # let the last render settle
        if cell is not None and output:
            area = self.cell(cell).locator(".jp-Cell-outputArea")
            size = self.page.viewport_size
            box = area.bounding_box()
            tall = size is not None and box is not None and box["height"] + 200 > size["height"]
            if tall and size is not None and box is not None:  # the whole output on one screen
                self.page.set_viewport_size({"width": size["width"], "height": int(box["height"]) + 300})
                time.sleep(0.5)
            area.scroll_into_view_if_needed()
            area.screenshot(path=str(target))
            if tall and size is not None:
                self.page.set_viewport_size(size)
        else:
            (self.cell(cell) if cell is not None else self.page).screenshot(path=str(target))
        return target

    def wait_for_output(self, text: str, *, cell: int | None = None) -> Locator:
        """Wait until an output (of `cell`, if given) contains `text` (case-sensitive); return it."""
        found = self._outputs(cell).filter(has_text=re.compile(re.escape(text))).first
        where = "any output" if cell is None else f"the output of cell {cell}"
        self._wait(lambda: found.wait_for(), f"'{text}' never appeared in {where}")
        return found

    def output_text(self, cell: int) -> str:
        """The text a person sees in cell `cell`'s output area (widgets included)."""
        return self.cell(cell).locator(".jp-Cell-outputArea").inner_text()

    def cut_placeholders(self, cell: int) -> list[str]:
        """The placeholders of `cell`'s visible text boxes that do not fit their box (cut short on screen)."""
        cut: list[str] = self.cell(cell).evaluate(
            """cell => {
                const ctx = document.createElement("canvas").getContext("2d");
                const cut = [];
                for (const el of cell.querySelectorAll(".jp-Cell-outputArea input[placeholder]")) {
                    if (!el.placeholder || el.offsetParent === null) continue;
                    const style = getComputedStyle(el);
                    ctx.font = style.font;
                    const pad = parseFloat(style.paddingLeft) + parseFloat(style.paddingRight);
                    const room = el.clientWidth - pad;
                    if (ctx.measureText(el.placeholder).width > room) cut.push(el.placeholder);
                }
                return cut;
            }"""
        )
        return cut

    # --- failures ---------------------------------------------------------------

    def save_artifacts(self, label: str) -> Path:
        """Save a screenshot, the page's HTML and its console log; return the screenshot's path."""
        self.artifacts.mkdir(parents=True, exist_ok=True)
        stem = self.artifacts / f"{self.name}-{label}"
        shot = stem.with_suffix(".png")
        try:
            self.page.screenshot(path=str(shot), full_page=True)
            stem.with_suffix(".html").write_text(self.page.content(), encoding="utf-8")
        except PlaywrightError as exc:  # the page may be gone
            self.console.append(f"[artifacts] could not capture the page: {exc}")
        stem.with_suffix(".console.txt").write_text("\n".join(self.console) + "\n", encoding="utf-8")
        self.saved.append(shot)
        return shot

    def fail(self, message: str) -> NoReturn:
        """Save the artifacts and fail the test with `message` and the screenshot's path."""
        shot = self.save_artifacts(re.sub(r"\W+", "-", message)[:40].strip("-") or "failure")
        log = _tail(self.server.log, 25)  # a kernel's own errors (a task's traceback) land here
        raise AssertionError(
            f"{message} (screenshot: {shot}){self._outputs_seen()}\nJupyterLab's log ends:\n{log}"
        )

    def _outputs_seen(self) -> str:
        """The end of what the open notebook's outputs say, for a failure read where no screenshot is."""
        try:
            text = "\n".join(self.page.locator(f"{_PANEL} .jp-OutputArea").all_inner_texts()).strip()
        except PlaywrightError:
            return ""
        return f"\nthe outputs end with:\n{text[-1200:]}" if text else ""

    def _wait(self, action: Any, message: str) -> None:
        try:
            action()
        except PlaywrightError as exc:  # TimeoutError is a subclass
            first_line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            self.fail(f"{message}: {first_line}")

    def _wait_for_runs(self, cells: list[int] | None) -> None:
        which = "every cell" if cells is None else f"cell {cells[0]}"
        self._wait(
            lambda: self.page.wait_for_function(RUNS_DONE, arg=[_PANEL, cells]),
            f"{which} did not finish running (or the kernel never became idle)",
        )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _tail(log: Path, lines: int = 40) -> str:
    try:
        return "\n".join(log.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"
