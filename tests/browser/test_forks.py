"""Forks in JupyterLab (notebooks/forks.ipynb): two continuations side by side, "Try another answer".

Cell 7 shows `compare(yes, no)`: the pause both branches continue from, then
one column per branch. Cell 11 is a live form: approve it, click "Try another
answer", deny the fork's fresh form, and the two continuations appear side by
side under it.
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


def _shot_of_comparison(lab: LabPage, cell: int, label: str) -> None:
    """A screenshot of the last comparison in `cell` alone (scrolled into view), when screenshots are on."""
    folder = os.environ.get("NB_AGENTS_SCREENSHOTS")
    if not folder:
        return
    view = lab.cell(cell).locator(".jp-Cell-outputArea .nba-compare").last
    view.scroll_into_view_if_needed()
    view.screenshot(path=str(Path(folder) / f"{lab.name}-{label}.png"))


def test_the_side_by_side_view_reads_at_a_glance(lab: LabPage) -> None:
    lab.open_notebook(NOTEBOOKS / "forks.ipynb")
    lab.run_all()
    shown = lab.wait_for_output("Both continue from this pause", cell=COMPARE).inner_text()
    for words in ("Original", "Fork", "approved", "denied", "the tool ran", "no tool ran", "Final text"):
        assert words in shown, shown
    assert "Done: sent $500 to savings." in shown and "The $500 stays in checking." in shown
    _side_by_side(lab, COMPARE)
    out = lab.cell(COMPARE).locator(".jp-Cell-outputArea")
    assert out.locator(".nba-diff del").count() >= 1 and out.locator(".nba-diff ins").count() >= 1
    assert out.locator("mjx-container, .MathJax").count() == 0  # "$500 ... $500" is never typeset
    lab.shot("compare", cell=COMPARE)


def test_try_another_answer_forks_the_pause_and_shows_both_branches(lab: LabPage) -> None:
    lab.open_notebook(NOTEBOOKS / "forks.ipynb")
    lab.run_all()
    lab.wait_for_output("Transfer money", cell=FORM)
    lab.click_button("Approve", cell=FORM)
    lab.wait_for_output("transferMoney ran", cell=FORM)

    lab.click_button("Try another answer", cell=FORM)
    lab.wait_for_output("Another answer", cell=FORM)
    lab.shot("forked", cell=FORM)
    lab.click_button("Deny", cell=FORM)  # the fork's fresh form: the original's is a record now

    shown = lab.wait_for_output("This answer", cell=FORM).inner_text()
    assert "Done: sent $500 to savings." in shown and "The $500 stays in checking." in shown, shown
    _side_by_side(lab, FORM)
    assert "Error" not in shown
    _shot_of_comparison(lab, FORM, "another-answer")
