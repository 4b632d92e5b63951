"""A deadline in JupyterLab (tests/browser/fixtures/deadline.ipynb): the countdown ticks, then the record.

The fixture's transfer waits 25 seconds for an approval. The form's deadline
line counts down in the browser (a ``<time>`` element); nobody answers, and
when the deadline is reached the form turns, without a click, into the record
of what the declared default did: "Nobody answered in time: ... denied", the
model's reply below, and no live button left. Shot in the light and dark themes.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lab_driver import LabPage

FIXTURES = Path(__file__).resolve().parent / "fixtures"
FORM = 1

# true once the countdown's line reads something other than what it read before
TICKED = """([selector, before]) => {
  const line = document.querySelector(selector);
  return line !== null && line.textContent !== before;
}"""


def test_the_countdown_ticks_and_the_expired_form_becomes_the_record_of_its_default(
    themed_lab: LabPage,
) -> None:
    lab = themed_lab
    lab.open_notebook(FIXTURES / "deadline.ipynb")
    lab.run_all()
    lab.wait_for_output("Expires in", cell=FORM)
    line = lab.cell(FORM).locator(".nba-countdown")
    before = line.inner_text()
    assert before.startswith("Expires in ") and " s (at " in before and "); then denied" in before, before
    assert line.locator("time").get_attribute("datetime")  # the deadline, machine-readable
    lab.shot("countdown", cell=FORM, output=True)

    # it ticks: a moment later the same line reads less time left
    selector = ".jp-NotebookPanel:not(.lm-mod-hidden) .nba-countdown"
    lab._wait(lambda: lab.page.wait_for_function(TICKED, arg=[selector, before]), "the countdown never moved")
    assert line.inner_text() != before

    # nobody answers: at the deadline the form becomes the record of its default, by itself
    shown = lab.wait_for_output("Nobody answered in time", cell=FORM).inner_text()
    assert "expired at" in shown and "denied: Nobody approved the transfer in time." in shown, shown
    assert "I did not move the money: Nobody approved the transfer in time." in shown, shown
    assert "transferMoney did not run" in shown and "FAILED_PRECONDITION" not in shown, shown
    assert "Waiting for" not in shown and "Expires in" not in shown
    outputs = lab.cell(FORM).locator(".jp-OutputArea-output")
    assert outputs.get_by_role("button", name="Approve", exact=True).count() == 0  # no live button left
    lab.shot("expired", cell=FORM, output=True)
