"""A saved notebook keeps an answered turn's record without nb_agents' server extension.

An editable install (``pip install -e``) never enables the extension, and
JupyterLab shows "Error displaying widget: model not found" for a widget whose
kernel is gone, whatever else its output holds. So an answered turn replaces
its cell's output with its record by itself: here JupyterLab runs with the
extension off, quickstart.ipynb is run and its form answered, saved, and
reopened with no kernel of its own; the record reads, in the light and the
dark theme.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from conftest import ARTIFACTS
from jupyter_env import isolated_env

if TYPE_CHECKING:
    from lab_driver import LabPage, LabServer
    from playwright.sync_api import Browser

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
FORM = 7  # quickstart.ipynb: the cell whose output is the form
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


@pytest.fixture(scope="module")
def bare_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    """JupyterLab as an editable install runs it: nb_agents' server extension off."""
    from lab_driver import LabServer

    base = tmp_path_factory.mktemp("bare-jupyterlab")
    server = LabServer.start(base, isolated_env(base / "jupyter", static=False), server_extension=False)
    server.settings_dir = base / "jupyter" / "config" / "lab" / "user-settings"
    yield server
    server.stop()


@pytest.fixture(params=["light", "dark"])
def page(request: pytest.FixtureRequest, bare_lab: LabServer, chromium: Browser) -> Iterator[LabPage]:
    from lab_driver import LabPage

    assert bare_lab.settings_dir is not None
    theme = bare_lab.settings_dir / "@jupyterlab" / "apputils-extension" / "themes.jupyterlab-settings"
    if request.param == "dark":
        theme.parent.mkdir(parents=True, exist_ok=True)
        theme.write_text('{"theme": "JupyterLab Dark"}', encoding="utf-8")
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name).strip("_")
    try:
        yield LabPage(context.new_page(), bare_lab, ARTIFACTS, name)
    finally:
        context.close()
        bare_lab.shutdown_kernels()
        theme.unlink(missing_ok=True)


def test_an_answered_turn_reopens_as_its_record_without_the_server_extension(page: LabPage) -> None:
    lab = page
    assert "saved with records" not in lab.server.log.read_text(errors="replace")  # the extension is off
    path = lab.open_notebook(NOTEBOOKS / "quickstart.ipynb")
    lab.run_all()
    lab.click_button("Approve", cell=FORM)
    lab.wait_for_output("transferMoney ran", cell=FORM)
    lab.wait_for_output("Done: the money is in savings.", cell=FORM)
    lab.save()
    lab.server.shutdown_kernels()

    lab.reopen(path)  # a new page and a new kernel: no widget model survives

    record = lab.wait_for_output("transferMoney ran", cell=FORM).inner_text()
    assert "Done: the money is in savings." in record and "Transfer money" in record, record
    shown = lab.notebook.inner_text()
    assert "model not found" not in shown and "Error displaying widget" not in shown
    saved = json.loads((lab.server.root / path).read_text(encoding="utf-8"))
    outputs = [o for o in saved["cells"][FORM]["outputs"] if o["output_type"] == "display_data"]
    assert outputs and all(WIDGET_MIME not in o["data"] for o in outputs)
    lab.shot("reopened", cell=FORM)
