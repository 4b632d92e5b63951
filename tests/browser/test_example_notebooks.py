"""The example notebooks in a real JupyterLab: each shows its live form, and a click resumes the turn.

Every example ends with a paused turn displayed in a cell: after Run All, that
cell shows a form with the buttons a person needs. quickstart.ipynb: clicking
Approve resumes the turn inline and the reply streams into the same output.

kernel-restart.ipynb: pause a deploy (cells 1-2), restart the kernel, define
the agent again (cells 1 and 4) and redraw the waiting form with ``pending(agent)``
(cell 6); clicking Approve there completes the turn from the store.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from lab_driver import LabPage

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"

# each example's last cell shows a live form; these are the buttons it leads with
FORMS = {
    "approval-rules.ipynb": ("Read table", "Approve always"),
    "banking-approval.ipynb": ("User approval", "Approve"),
    "deadlines.ipynb": ("Transfer money", "Approve"),
    "edit-and-restart.ipynb": ("Transfer money", "Edit arguments"),
    "forks.ipynb": ("Transfer money", "Approve"),
    "multiple-interrupts.ipynb": ("Delete file", "Continue"),
    "partial-answers.ipynb": ("Pay invoice", "Approve"),
    "quickstart.ipynb": ("Transfer money", "Approve"),
    "real-models.ipynb": ("Transfer money", "Approve"),
    "sub-agents.ipynb": ("Transfer money", "Approve"),
    "tool-approval.ipynb": ("Send email", "Approve"),
    "tool-failure.ipynb": ("Exchange rate", "Deny"),
}


# examples whose live forms have browser tests of their own (they end past their forms)
OWN_TESTS = {
    "chat.ipynb": "test_chat_notebook.py",
    "inbox.ipynb": "test_inbox_lab.py",
    "kernel-restart.ipynb": "test_kernel_restart_*",
    "mcp.ipynb": "test_mcp_elicitation.py",
    "traces.ipynb": "test_subagents_timeline.py",
}


def test_every_example_is_listed_here() -> None:
    assert sorted(FORMS) == sorted(p.name for p in NOTEBOOKS.glob("*.ipynb") if p.name not in OWN_TESTS)


@pytest.mark.parametrize("name", sorted(FORMS))
def test_every_example_shows_its_live_form(lab: LabPage, name: str) -> None:
    lab.open_notebook(NOTEBOOKS / name)
    lab.run_all()
    title, button = FORMS[name]
    last = lab.notebook.locator(".jp-Notebook .jp-Cell").count() - 1
    lab.wait_for_output(title, cell=last)
    buttons = lab.cell(last).locator(".jp-OutputArea-output button")
    lab._wait(lambda: buttons.first.wait_for(), f"no live form in the last cell of {name}")
    labels = [b.strip() for b in buttons.all_inner_texts()]
    assert button in labels and ("Deny" in labels or "Send answer" in labels), labels
    assert "Error" not in lab.output_text(last)
    lab.shot("form", cell=last)


def test_quickstart_approve_in_the_form_resumes_the_turn_inline(lab: LabPage) -> None:
    lab.open_notebook(NOTEBOOKS / "quickstart.ipynb")
    lab.run_all()
    lab.wait_for_output("Transfer money", cell=7)
    assert "Done: the money is in savings." not in lab.output_text(7)

    lab.click_button("Approve", cell=7)

    shown = lab.wait_for_output("Done: the money is in savings.", cell=7).inner_text()
    assert shown.count("Done: the money is in savings.") == 1, shown


def test_after_a_kernel_restart_pending_redraws_the_form_and_completes_the_turn(lab: LabPage) -> None:
    lab.open_notebook(NOTEBOOKS / "kernel-restart.ipynb")
    lab.run_cell(1)
    lab.run_cell(2)
    lab.wait_for_output("interrupted", cell=2)

    lab.restart_kernel()
    lab.run_cell(1)
    lab.run_cell(4)  # agent = make_agent(): a new object over the same SQLite file
    lab.wait_for_output("release-2.1", cell=4)
    lab.run_cell(6)
    lab.wait_for_output("1 paused turn waiting for an answer", cell=6)
    lab.click_button("Approve", cell=6)

    lab.wait_for_output("Result: deployed v2.1.", cell=6)
    lab.wait_for_output("Approved by you at", cell=6)
    lab.wait_for_output("0 paused turns waiting for an answer · 1 answered here", cell=6)
    lab.run_cell(7)  # nothing is left waiting, and the deploy happened once
    log = lab.wait_for_output("deploys:", cell=7).inner_text()
    assert "deploys: ['v2.1']" in log, log
    lab.shot("after-restart", cell=6)
