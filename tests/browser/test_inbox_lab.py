"""The Inbox widget in a real JupyterLab (light and dark): rows, a row selected, a batch approved.

notebooks/inbox.ipynb, Run All: its last cell shows the inbox over three agents
(four waiting interrupts). A person ticks the first row's box and clicks
**Approve selected**: the status says so and the row leaves; the last row gets
its own verb (**Cancel**) from its dropdown and the batch button sends it.
Screenshots (``NB_AGENTS_SCREENSHOTS=<dir>``): inbox-*.png.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from lab_driver import LabPage

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "inbox.ipynb"


def _answer_two(lab: LabPage) -> None:
    lab.open_notebook(NOTEBOOK)
    lab.run_all()
    last = lab.notebook.locator(".jp-Notebook .jp-Cell").count() - 1
    lab.wait_for_output("4 interrupts waiting for an answer", cell=last)
    out = lab.cell(last).locator(".jp-OutputArea-output")
    lab._wait(lambda: out.locator(".widget-button").first.wait_for(), "no live inbox in the last cell")
    text = lab.output_text(last)
    for expected in ("asked by ana", "Refund order", "waiting", "Approve selected", "Cancel selected"):
        assert expected in text, (expected, text)
    assert "Error" not in text
    lab.shot("rows", cell=last)
    boxes = out.locator(".nba-inbox-row").locator("xpath=ancestor::div[contains(@class,'widget-hbox')][1]")
    assert boxes.count() == 4
    boxes.nth(0).locator("input[type=checkbox]").check()
    lab.click_button("Approve selected", cell=last)
    lab.wait_for_output("Approved 1", cell=last)
    lab.wait_for_output("3 interrupts waiting for an answer", cell=last)
    # the last row: its own verb, Cancel, from its dropdown; the batch button sends it
    rows = out.locator(".nba-inbox-row").locator("xpath=ancestor::div[contains(@class,'widget-hbox')][1]")
    rows.nth(2).locator("select").select_option(label="Cancel")
    lab.click_button("Approve selected", cell=last)
    lab.wait_for_output("Cancelled 1", cell=last)
    lab.wait_for_output("2 interrupts waiting for an answer", cell=last)
    lab.shot("answered", cell=last)


def test_the_inbox_answers_a_selected_row_and_a_rows_own_choice(lab: LabPage) -> None:
    _answer_two(lab)


@pytest.mark.usefixtures("dark_lab")
def test_the_inbox_in_the_dark_theme(lab: LabPage) -> None:
    _answer_two(lab)
