"""Fixtures for browser tests: a real JupyterLab, driven in headless Chromium.

Every test under tests/browser/ is marked ``browser`` (``pytest -m browser``
selects them, ``-m "not browser"`` leaves them out). They need Debian's
Chromium (``scripts/ensure_chromium.sh`` installs it; ``CHROMIUM`` overrides
the path) and the e2e extra (jupyterlab, ipywidgets, playwright). Without them
the tests are skipped with the reason, except in CI (``CI=true``), where a
missing piece is an error: CI must never pass by skipping them.

Fixtures:
    lab_server: one JupyterLab for the session (`lab_driver.LabServer`), its
        Jupyter folders isolated, live widgets (``NB_AGENTS_STATIC=0``).
    chromium: one headless Chromium for the session (a fresh temp profile).
    lab: per test, a new browser context and page as a `lab_driver.LabPage`;
        its kernels are shut down afterwards.
    dark_lab: the same, with JupyterLab's dark theme set in the user settings.
    themed_lab: `lab` and `dark_lab` in turn (a test that takes it runs in both themes).

When a test fails, a screenshot, the page's HTML and its console log are saved
in tests/browser/artifacts/ (git-ignored) and the report names them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from jupyter_env import MISSING_E2E_HINT, e2e_missing, in_ci, isolated_env

if TYPE_CHECKING:
    from lab_driver import LabPage, LabServer
    from playwright.sync_api import Browser

HERE = Path(__file__).resolve().parent
ARTIFACTS = HERE / "artifacts"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")

_LAB_PAGE = pytest.StashKey["LabPage"]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "browser: drives JupyterLab in headless Chromium (tests/browser)")


def missing_requirements() -> str | None:
    """Why the browser tests cannot run here, or None when everything is in place."""
    modules = e2e_missing("playwright", "jupyterlab", "ipykernel", "ipywidgets")
    if modules:
        return f"browser tests need {', '.join(modules)}: {MISSING_E2E_HINT}"
    if not os.access(CHROMIUM, os.X_OK):
        return f"browser tests need Chromium at {CHROMIUM}: run scripts/ensure_chromium.sh as root"
    return None


@pytest.hookimpl(tryfirst=True)  # before -m selection reads the marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    ours = [item for item in items if HERE in Path(str(item.path)).parents]
    if not ours:
        return
    reason = None if in_ci() else missing_requirements()
    for item in ours:
        item.add_marker(pytest.mark.browser)
        if reason:
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="session")
def lab_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    """One JupyterLab on 127.0.0.1 for the whole session."""
    _require()
    from lab_driver import LabServer

    base = tmp_path_factory.mktemp("jupyterlab")
    server = LabServer.start(base, isolated_env(base / "jupyter", static=False))
    server.settings_dir = base / "jupyter" / "config" / "lab" / "user-settings"
    yield server
    server.stop()


@pytest.fixture(scope="session")
def chromium() -> Iterator[Browser]:
    """Debian's Chromium, headless, launched by Playwright (never a downloaded browser)."""
    _require()
    from lab_driver import CHROMIUM_ARGS
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=list(CHROMIUM_ARGS)
        )
        yield browser
        browser.close()


@pytest.fixture
def lab(request: pytest.FixtureRequest, lab_server: LabServer, chromium: Browser) -> Iterator[LabPage]:
    """A fresh page on the session's JupyterLab; kernels it started end with the test."""
    from lab_driver import LabPage

    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name).strip("_")
    page = LabPage(context.new_page(), lab_server, ARTIFACTS, name)
    request.node.stash[_LAB_PAGE] = page
    try:
        yield page
    finally:
        context.close()
        lab_server.shutdown_kernels()


@pytest.fixture
def dark_lab(lab_server: LabServer, lab: LabPage) -> Iterator[LabPage]:
    """`lab` in JupyterLab's dark theme (a user setting, read when the page loads)."""
    theme = lab_server.settings_dir / "@jupyterlab" / "apputils-extension" / "themes.jupyterlab-settings"
    theme.parent.mkdir(parents=True, exist_ok=True)
    theme.write_text('{"theme": "JupyterLab Dark"}', encoding="utf-8")
    try:
        yield lab
    finally:
        theme.unlink(missing_ok=True)


@pytest.fixture(params=["light", "dark"])
def themed_lab(request: pytest.FixtureRequest) -> LabPage:
    """`lab` in the light theme, then `dark_lab`: the screens a test shoots, in both themes."""
    page: LabPage = request.getfixturevalue("lab" if request.param == "light" else "dark_lab")
    return page


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    page = item.stash.get(_LAB_PAGE, None)
    if page is not None and report.when == "call" and report.failed:
        # a LabPage wait that failed has saved them already (and named them in its message)
        shots = page.saved or [page.save_artifacts("failed")]
        listed = "\n".join(f"screenshot: {shot}" for shot in shots)
        report.sections.append(
            ("browser artifacts", f"{listed}\n(the page's HTML and console log lie beside each)")
        )
    return report


def _require() -> None:
    reason = missing_requirements()
    if reason is None:
        return
    if in_ci():
        pytest.fail(f"{reason} (CI=true: browser tests must run, not skip)")
    pytest.skip(reason)
