"""Forks in JupyterLab (notebooks/forks.ipynb): two continuations side by side, flat.

Cell 7 shows `compare(yes, no)`: the pause both branches continue from, then
one column per branch. Cell 11 is a live form: approve it, click "Try another
answer", deny the fork's fresh form, and the two answers appear side by side
under the question, asked once: one table, no card inside a card, one "Try
another answer" button, the denial in words (not JSON). Shot in both themes.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lab_driver import LabPage

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
COMPARE, FORM = 7, 11


def _side_by_side(lab: LabPage, cell: int) -> None:
    """The first comparison in `cell`: its two columns on one row, the first to the left, both readable."""
    out = lab.cell(cell).locator(".jp-Cell-outputArea")
    a = out.locator(".nba-compare td.nba-branch-a").first
    b = out.locator(".nba-compare td.nba-branch-b").first
    box_a, box_b = a.bounding_box(), b.bounding_box()
    assert box_a is not None and box_b is not None
    assert abs(box_a["y"] - box_b["y"]) < 2 and box_a["x"] + box_a["width"] <= box_b["x"] + 1
    assert box_a["width"] > 150 and box_b["width"] > 150  # each column wide enough to read


def _shot_of(lab: LabPage, cell: int, selector: str, label: str) -> None:
    """A screenshot of the last `selector` in `cell` alone (scrolled into view), when screenshots are on."""
    folder = os.environ.get("NB_AGENTS_SCREENSHOTS")
    if not folder:
        return
    view = lab.cell(cell).locator(f".jp-Cell-outputArea {selector}").last
    view.scroll_into_view_if_needed()
    view.screenshot(path=str(Path(folder) / f"{lab.name}-{label}.png"))


def test_the_side_by_side_view_reads_at_a_glance(lab: LabPage) -> None:
    lab.open_notebook(NOTEBOOKS / "forks.ipynb")
    lab.run_all()
    shown = lab.wait_for_output("Both continue from this pause", cell=COMPARE).inner_text()
    for words in ("Original", "Fork", "approved", "denied", "transferMoney ran", "no tool ran"):
        assert words in shown, shown
    assert "Done: sent $500 to savings." in shown and "The $500 stays in checking." in shown
    assert "the assistant was told: “The user denied it: not this month.”" in shown, shown
    assert '"error"' not in shown and "{" not in shown  # the denial in words, not JSON
    _side_by_side(lab, COMPARE)
    out = lab.cell(COMPARE).locator(".jp-Cell-outputArea")
    assert out.locator("details").count() == 0  # flat: nothing folded away
    assert out.locator("mjx-container, .MathJax").count() == 0  # "$500 ... $500" is never typeset
    lab.shot("compare", cell=COMPARE, output=True)


def test_try_another_answer_compares_the_two_answers_flat(themed_lab: LabPage) -> None:
    lab = themed_lab
    lab.open_notebook(NOTEBOOKS / "forks.ipynb")
    lab.run_all()
    lab.wait_for_output("Transfer money", cell=FORM)
    lab.click_button("Approve", cell=FORM)
    lab.wait_for_output("transferMoney ran", cell=FORM)

    lab.click_button("Try another answer", cell=FORM)
    lab.wait_for_output("the same question, answered anew", cell=FORM)
    out = lab.cell(FORM).locator(".jp-Cell-outputArea")
    # the fork's form sits below the record, with no "Try another answer" of its own
    assert out.get_by_role("button", name="Try another answer", exact=True).count() == 0
    lab.shot("forked", cell=FORM, output=True)
    lab.click_button("Deny", cell=FORM)  # the fork's fresh form: the original's is a record now

    shown = lab.wait_for_output("First answer", cell=FORM).inner_text()
    assert "Another answer" in shown and "Done: sent $500 to savings." in shown, shown
    assert "The $500 stays in checking." in shown and "Error" not in shown, shown
    assert "the assistant was told: “The user denied the call to 'transferMoney'.”" in shown, shown
    _side_by_side(lab, FORM)
    # flat: one table, the question once, no view nested in a view, one button, one toggle
    assert out.locator(".nba-compare").count() == 1
    assert out.locator(".nba-turn-view .nba-turn-view").count() == 0
    assert shown.count("Transfer money") == 1
    assert out.get_by_role("button", name="Try another answer", exact=True).count() == 1
    assert out.locator("details").count() <= 1
    lab.shot("compared", cell=FORM, output=True)
    _shot_of(lab, FORM, ".nba-compare", "compared-table")
