"""Several interrupts in one turn (notebooks/partial-answers.ipynb): each form answers on its own.

The last cell shows three "Pay invoice" forms. Approving the first sends it at
once (a partial answer): it says it was answered and that the turn resumes
when the last is answered, while the others stay open. Denying the second and
approving the third resumes the turn, and the reply appears below.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lab_driver import LabPage

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
FORMS = 7


def _button(lab: LabPage, label: str, n: int) -> None:
    """Click the `n`-th button labelled `label` in the forms' cell (one per form)."""
    buttons = (
        lab.cell(FORMS)
        .locator(".jp-OutputArea-output")
        .get_by_role("button", name=re.compile(rf"^\W*{label}$"))
    )
    lab._wait(lambda: buttons.nth(n).click(), f"could not click {label} #{n}")


def test_each_form_answers_on_its_own_and_the_last_resumes_the_turn(lab: LabPage) -> None:
    lab.open_notebook(NOTEBOOKS / "partial-answers.ipynb")
    lab.run_all()
    lab.wait_for_output("each is sent as you answer it", cell=FORMS)
    _button(lab, "Approve", 0)

    shown = lab.wait_for_output("1 of 3 answered", cell=FORMS).inner_text()
    assert "the turn resumes when the last is answered" in shown
    assert "invoices paid" not in shown  # the model waits for the last answer
    out = lab.cell(FORMS).locator(".jp-OutputArea-output")
    assert out.get_by_role("button", name=re.compile(r"^\W*Approve$")).nth(0).is_disabled()
    assert not out.get_by_role("button", name=re.compile(r"^\W*Approve$")).nth(1).is_disabled()
    lab.shot("one-answered", cell=FORMS)

    _button(lab, "Deny", 1)
    lab.wait_for_output("2 of 3 answered", cell=FORMS)
    _button(lab, "Approve", 2)
    reply = lab.wait_for_output("2 of 3 invoices paid", cell=FORMS).inner_text()
    assert "paid Acme $120; paid Initech $300." in reply and "Error" not in reply
    lab.shot("all-answered", cell=FORMS)
