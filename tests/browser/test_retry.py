"""Retry in JupyterLab (issue 11): an approved tool fails, the user fixes it, Retry runs it once more.

tests/browser/fixtures/retry.ipynb: cell 1 pauses on a held ``payBill`` whose
tool raises; Approve runs it and the form says the answer ran and the turn
stopped, with the error and a Retry button (Approve is not offered again: the
answer took effect). Cell 2 redefines the tool (``agent.update_tools``); Retry
runs it once more and the reply streams into the same output. Cell 3 prints
the tool's runs and the audit: one failed attempt, one retry.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lab_driver import LabPage

RETRY = Path(__file__).resolve().parent / "fixtures" / "retry.ipynb"


def test_a_failed_answer_is_fixed_and_retried_once(lab: LabPage) -> None:
    lab.open_notebook(RETRY)
    lab.run_cell(1)
    lab.wait_for_output("Approve", cell=1)
    lab.click_button("Approve", cell=1)

    failed = lab.wait_for_output("the bank is closed", cell=1).inner_text()
    assert "Your answer ran, and then the turn stopped" in failed, failed
    assert "Retry" in failed and "agent.update_tools" in failed, failed
    lab.shot("failed-with-retry", cell=1)

    lab.run_cell(2)
    lab.wait_for_output("fixed", cell=2)
    lab.click_button("Retry", cell=1)

    done = lab.wait_for_output("Paid: 500 dollars sent.", cell=1).inner_text()
    assert "Your answer ran, and then the turn stopped" not in done, done
    lab.shot("retried", cell=1)

    lab.run_cell(3)
    ledger = lab.wait_for_output("runs:", cell=3).inner_text()
    assert "runs: [500, 500] | audit: ['restart', 'restart']" in ledger, ledger
