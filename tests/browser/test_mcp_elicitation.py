"""An MCP server's question as a form in a real JupyterLab (notebooks/mcp.ipynb).

Run the setup cells (1, 2) and the cell that asks the demo server to tag a note
(12): the server's elicitation pauses the turn and the response is a form. A
person fills it (tags typed, a priority picked, Pinned ticked) and presses
Accept; the call goes to the server again with the answer and the state the
server returned with its question (the demo speaks MCP 2026-07-28, so nothing
was held open), the tag is written, and the turn's reply appears in the same
output. Cell 14 then finds nothing left to
answer and shows the note, tagged once.

Screenshots of the filled form and of the answered turn are saved in
tests/browser/artifacts/ (mcp-elicitation-form.png, mcp-elicitation-answered.png).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lab_driver import LabPage

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
FORM = 12


def test_an_elicitation_form_answers_the_mcp_server(lab: LabPage) -> None:
    lab.open_notebook(NOTEBOOKS / "mcp.ipynb")
    lab.run_cell(1)
    lab.run_cell(2)
    lab.run_cell(FORM)
    lab.wait_for_output("asks, while running", cell=FORM)
    shown = lab.output_text(FORM)
    assert "How should 'ideas.txt' be tagged?" in shown, shown
    assert "How urgent the note is" in shown, shown  # each field's description is on show

    lab.fill("Tags", "browser, mcp", cell=FORM)
    outputs = lab.cell(FORM).locator(".jp-OutputArea-output")
    outputs.get_by_label("Priority", exact=True).select_option(label="high")
    outputs.get_by_label("Pinned", exact=True).check()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    lab.cell(FORM).screenshot(path=str(ARTIFACTS / "mcp-elicitation-form.png"))

    lab.click_button("Accept", cell=FORM)
    lab.wait_for_output("Done: tagged ideas.txt: [high pinned] tags: browser, mcp", cell=FORM)
    lab.cell(FORM).screenshot(path=str(ARTIFACTS / "mcp-elicitation-answered.png"))

    lab.run_cell(14)  # nothing left to answer: it prints the reply and the note
    note = lab.wait_for_output("an MCP server for notes", cell=14).inner_text()
    assert note.count("[high pinned] tags: browser, mcp") == 2, note  # the reply, and the note's one tag line
