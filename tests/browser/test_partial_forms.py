"""Several interrupts in one turn (notebooks/partial-answers.ipynb): each form answers on its own.

The last cell shows three "Pay invoice" forms, each in a block of its own.
Approving the first sends it at once (a partial answer): that block loses its
"needs approval" badge and says, inside itself, what ran and that the turn
resumes when the last is answered, while the others stay open. Denying the
second and approving the third resumes the turn; the reply appears below and
the status line names each call ("payInvoice (Acme) ran, ..."). Buttons are
found by their exact names; the Reason box's placeholder reads whole. Shot in
both themes.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lab_driver import LabPage

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
FORMS = 7


def _button(lab: LabPage, label: str, n: int) -> None:
    """Click the `n`-th button named exactly `label` in the forms' cell (one per form)."""
    buttons = lab.cell(FORMS).locator(".jp-OutputArea-output").get_by_role("button", name=label, exact=True)
    lab._wait(lambda: buttons.nth(n).click(), f"could not click {label} #{n}")


def test_each_form_answers_on_its_own_and_the_last_resumes_the_turn(themed_lab: LabPage) -> None:
    lab = themed_lab
    lab.open_notebook(NOTEBOOKS / "partial-answers.ipynb")
    lab.run_all()
    lab.wait_for_output("each is sent as you answer it", cell=FORMS)
    out = lab.cell(FORMS).locator(".jp-OutputArea-output")
    assert out.get_by_role("button", name="Approve", exact=True).count() == 3
    _button(lab, "Approve", 0)

    shown = lab.wait_for_output("1 of 3 answered", cell=FORMS).inner_text()
    assert "invoices paid" not in shown  # the model waits for the last answer
    first = out.locator(".nba-form").nth(0)
    said = first.inner_text()
    assert "payInvoice (Acme) ran; the turn resumes when the last is answered" in said, said
    assert "needs approval" not in said and "approved" in said, said
    assert "the turn resumes" not in out.locator(".nba-form").nth(1).inner_text()
    assert out.get_by_role("button", name="Approve", exact=True).count() == 2  # the answered one is a record
    lab.shot("one-answered", cell=FORMS, output=True)
    # the crowded row (Approve always too): the reason box moves to a line of its own before
    # its placeholder is cut short
    assert lab.cut_placeholders(FORMS) == [], lab.cut_placeholders(FORMS)

    _button(lab, "Deny", 0)  # Globex: the first form still asking
    lab.wait_for_output("2 of 3 answered", cell=FORMS)
    _button(lab, "Approve", 0)  # Initech
    reply = lab.wait_for_output("2 of 3 invoices paid", cell=FORMS).inner_text()
    assert "paid Acme $120; paid Initech $300." in reply and "Error" not in reply
    assert "payInvoice (Acme) ran, payInvoice (Globex) did not run, payInvoice (Initech) ran" in reply, reply
    lab.shot("all-answered", cell=FORMS, output=True)
