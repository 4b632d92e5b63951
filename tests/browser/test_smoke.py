"""The whole browser chain works: JupyterLab, the widget manager, Chromium, Playwright.

tests/browser/fixtures/smoke.ipynb has a markdown cell (0), a Note field and an Approve
button whose click prints "clicked: approved" (and the note) into an Output
widget (1), and a cell printing the kernel's pid and interpreter (2). If these
pass, a failing widget test is about the widget.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lab_driver import LabPage

SMOKE = Path(__file__).resolve().parent / "fixtures" / "smoke.ipynb"


def _kernel(lab: LabPage) -> tuple[int, str]:
    """The pid and interpreter that cell 2 printed."""
    text = lab.wait_for_output("kernel pid=", cell=2).inner_text()
    match = re.search(r"kernel pid=(\d+)\s+python=(\S+)", text)
    assert match, f"cell 2 printed {text!r}"
    return int(match.group(1)), match.group(2)


def test_clicking_a_widget_button_runs_its_handler_in_the_kernel(lab: LabPage) -> None:
    lab.open_notebook(SMOKE)
    lab.run_all()
    assert "clicked: approved" not in lab.output_text(1)

    lab.fill("Note", "ship it", cell=1)
    lab.click_button("Approve", cell=1)

    lab.wait_for_output("clicked: approved", cell=1)
    shown = lab.wait_for_output("note: ship it", cell=1).inner_text()
    assert shown.count("clicked: approved") == 1, shown


def test_restarting_the_kernel_then_rerunning_a_cell_shows_the_new_kernel(lab: LabPage) -> None:
    lab.open_notebook(SMOKE)
    lab.run_all()
    before, python = _kernel(lab)
    assert python == sys.executable, "the kernel is not this test's interpreter"

    lab.restart_kernel()
    lab.run_cell(2)

    after, python = _kernel(lab)
    assert after != before, f"cell 2 still shows pid {before} after the restart"
    assert python == sys.executable
