"""The example notebooks in a real JupyterLab: a click on a form resumes the turn.

quickstart.ipynb: run all; the last cell (7) shows the paused transfer as a
form; clicking Approve resumes the turn inline and the reply streams into
the same output.

kernel-restart.ipynb: pause a deploy (cells 1-2), restart the kernel, define
the agent again (cells 1 and 4) and redraw the waiting form with ``pending(agent)``
(cell 6); clicking Approve there completes the turn from the store.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lab_driver import LabPage

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def test_quickstart_approve_in_the_form_resumes_the_turn_inline(lab: LabPage) -> None:
    lab.open_notebook(NOTEBOOKS / "quickstart.ipynb")
    lab.run_all()
    lab.wait_for_output("transferMoney", cell=7)
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
    lab.wait_for_output("deployRelease", cell=6)
    lab.click_button("Approve", cell=6)

    lab.wait_for_output("Result: deployed v2.1.", cell=6)
    lab.run_cell(7)  # nothing is left waiting, and the deploy happened once
    log = lab.wait_for_output("deploys:", cell=7).inner_text()
    assert "deploys: ['v2.1']" in log, log
