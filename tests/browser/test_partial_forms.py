"""Several interrupts in one turn (notebooks/partial-answers.ipynb): each form answers on its own.

The last cell shows three "Pay invoice" forms, each in a block of its own.
Approving the first sends it at once (a partial answer): that block loses its
"needs approval" badge and says, inside itself, what ran and that the turn
resumes when the last is answered, while the others stay open. Denying the
second and approving the third resumes the turn; the reply appears below and
the status line names each call ("payInvoice (Acme) ran, ..."). Buttons are
found by their exact names; the Reason box's placeholder reads whole. Shot in
both themes.

tests/browser/fixtures/elsewhere.ipynb: cell 1 shows two held payments; cell 2
cancels the second as lee, from another chat. Once cell 2 has run (nobody
clicks), the second form says "Already answered (cancelled by lee at ...)"
and offers no buttons; the first still asks, and approving it resumes the turn.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lab_driver import LabPage

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
ELSEWHERE = Path(__file__).resolve().parent / "fixtures" / "elsewhere.ipynb"
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


def test_a_question_answered_in_another_cell_closes_its_form_when_that_cell_has_run(lab: LabPage) -> None:
    lab.open_notebook(ELSEWHERE)
    lab.run_cell(1)
    lab.wait_for_output("each is sent as you answer it", cell=1)
    out = lab.cell(1).locator(".jp-OutputArea-output")
    assert out.get_by_role("button", name="Approve", exact=True).count() == 2

    lab.run_cell(2)  # lee cancels Globex's payment from another chat; nobody clicks here
    lab.wait_for_output("lee answered Globex", cell=2)
    closed = lab.wait_for_output("Already answered (cancelled by lee at", cell=1).inner_text()
    assert "1 of 2 answered" in closed, closed
    forms = out.locator(".nba-form")
    assert "Globex" in forms.nth(1).inner_text() and "Acme" in forms.nth(0).inner_text()
    assert out.get_by_role("button", name="Approve", exact=True).count() == 1  # Acme's, still asking
    assert "already resumed" not in closed and "snapshot" not in closed, closed
    lab.shot("answered-elsewhere", cell=1, output=True)

    lab.click_button("Approve", cell=1)
    done = lab.wait_for_output("Done: paid Acme", cell=1).inner_text()
    assert "payBill (Acme) ran" in done and "cancelled by lee at" in done, done
    lab.run_cell(3)
    ledger = lab.wait_for_output("runs:", cell=3).inner_text()
    # lee's cancel, then this notebook's approval (answered by its user, whoever runs the test)
    assert "runs: ['Acme'] | audit: [('payBill', 'cancel', 'lee'), ('payBill', 'restart', '" in ledger, ledger
