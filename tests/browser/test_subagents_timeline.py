"""A sub-agent's question and a timeline in a real JupyterLab, in the light and dark themes.

notebooks/sub-agents.ipynb ends with a live form for a question the ``payments``
sub-agent asks through the ``lead``: it says which agent asks, and Approve there
resumes both. notebooks/traces.ipynb ends with the session's `Timeline`: the
turns, the tools, the waits for a person and who answered, sub-agents indented.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lab_driver import LabPage

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
FORM_CELL = 16  # sub-agents.ipynb: the last cell, a new pause shown as its form
TIMELINE_CELL = 10  # traces.ipynb: the last cell, Timeline(chat)


def _luminance(css: str) -> float:
    r, g, b = (int(x) for x in re.findall(r"\d+", css)[:3])
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255


def test_the_form_says_which_agent_asks_and_approve_resumes_the_sub_agent_then_the_lead(lab: LabPage) -> None:
    lab.open_notebook(NOTEBOOKS / "sub-agents.ipynb")
    lab.run_all()
    form = lab.wait_for_output("Asked by", cell=FORM_CELL)
    shown = form.inner_text()
    assert "payments" in shown and "Transfer money" in shown and "INV-5" in shown, shown
    lab.shot("nested-form", cell=FORM_CELL)
    lab.click_button("Approve", cell=FORM_CELL)
    done = lab.wait_for_output("Payment: sent 1,250.00 EUR", cell=FORM_CELL).inner_text()
    # once as the sub-agent tool's row, once in the lead's reply: each shown once
    assert done.count("payments → Payment: sent") == 1 and done.count("Done. Payment: sent") == 1, done
    lab.shot("nested-approved", cell=FORM_CELL)


def test_the_nested_form_reads_in_the_dark_theme(dark_lab: LabPage) -> None:
    lab = dark_lab
    lab.open_notebook(NOTEBOOKS / "sub-agents.ipynb")
    lab.run_all()
    asked = lab.wait_for_output("Asked by", cell=FORM_CELL).locator(".nba-asked-by b").first
    color = asked.evaluate("(el) => getComputedStyle(el).color")
    back = lab.page.locator(".jp-Notebook").evaluate("(el) => getComputedStyle(el).backgroundColor")
    assert _luminance(color) > 0.6 > 0.2 > _luminance(back), (color, back)
    lab.shot("nested-form-dark", cell=FORM_CELL)


def _timeline(lab: LabPage) -> str:
    lab.open_notebook(NOTEBOOKS / "traces.ipynb")
    lab.run_all()
    return lab.wait_for_output("Waited for a person", cell=TIMELINE_CELL).inner_text()


def test_the_timeline_shows_the_turns_the_wait_and_who_answered(lab: LabPage) -> None:
    shown = _timeline(lab)
    assert "Session timeline" in shown and "Approved by ana" in shown, shown
    assert "publishPost" in shown and "writer" in shown and re.search(r"\d+ ms", shown), shown
    assert re.search(r"\b\d{2}:\d{2}:\d{2}\b", shown), shown  # live: clock times and lengths
    lab.shot("timeline", cell=TIMELINE_CELL)


def test_the_timeline_reads_in_the_dark_theme(dark_lab: LabPage) -> None:
    lab = dark_lab
    _timeline(lab)
    title = lab.cell(TIMELINE_CELL).locator(".nba-timeline b").first
    color = title.evaluate("(el) => getComputedStyle(el).color")
    box = lab.cell(TIMELINE_CELL).locator(".nba-timeline").first
    back = box.evaluate("(el) => getComputedStyle(el).backgroundColor")
    assert _luminance(color) > 0.6 > 0.2 > _luminance(back), (color, back)
    lab.shot("timeline-dark", cell=TIMELINE_CELL)


def test_the_saved_timeline_reads_without_running(lab: LabPage) -> None:
    """The notebook as stored (static rendering: no clock times, bars in order) reads as it is opened."""
    lab.open_notebook(NOTEBOOKS / "traces.ipynb")
    shown = lab.wait_for_output("Waited for a person", cell=TIMELINE_CELL).inner_text()
    assert "Approved by ana" in shown and not re.search(r"\b\d{2}:\d{2}:\d{2}\b", shown), shown
    lab.shot("timeline-saved", cell=TIMELINE_CELL)
