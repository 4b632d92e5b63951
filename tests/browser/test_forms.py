"""Forms as a person meets them in JupyterLab: read, answered, recorded, saved, reopened.

The notebooks are the examples (notebooks/) and tests/browser/fixtures/replies.ipynb,
whose cells show model text with dollar amounts, markdown (a code block, a
table) and hostile markdown. Reference screenshots are written when
``NB_AGENTS_SCREENSHOTS`` names a folder; a failure always keeps one in
tests/browser/artifacts/.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lab_driver import LabPage

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
REPLIES = Path(__file__).resolve().parent / "fixtures" / "replies.ipynb"
DOLLARS = "I moved $500 to savings and $200 to checking."
TIME = r"\d{2}:\d{2}"


def typeset(lab: LabPage, cell: int) -> int:
    """How many MathJax formulas the output of `cell` holds (there must be none)."""
    return lab.cell(cell).locator(".jp-Cell-outputArea mjx-container, .jp-Cell-outputArea .MathJax").count()


def test_a_form_reads_as_a_summary_and_approving_updates_its_status(lab: LabPage) -> None:
    lab.open_notebook(NOTEBOOKS / "quickstart.ipynb")
    lab.run_all()
    lab.wait_for_output("Transfer money", cell=7)
    shown = lab.output_text(7)
    # the question in prose, the model's own words, labelled arguments; no raw JSON in sight
    for words in ("Transfer $500.00 from checking to savings", "The assistant wrote", "please confirm"):
        assert words in shown, shown
    # the amount as its schema says (dollars), each description beside its value as a hint
    assert re.search(r"To account\s+savings", shown) and re.search(r"Amount\s+\$500\.00", shown), shown
    assert "How much to move, in dollars" in shown, shown
    assert "Toaccount" not in shown and '"toAccount"' not in shown and "Raw JSON" in shown
    assert shown.index("Amount") < shown.index("Approve") and "Deny" in shown and "Reason" in shown
    assert lab.cut_placeholders(7) == []  # the Reason box's hint reads whole, beside Deny
    deny, reason = (
        lab.cell(7).get_by_role("button", name="Deny"),
        lab.cell(7).get_by_role("textbox", name="Reason"),
    )
    assert abs(deny.bounding_box()["y"] - reason.bounding_box()["y"]) < 8  # one row: room enough
    lab.shot("form", cell=7)

    lab.click_button("Approve", cell=7)

    status = lab.wait_for_output("transferMoney ran", cell=7).inner_text()
    assert re.search(rf"Approved (by \S+ )?at {TIME} · transferMoney ran", status), status
    assert "Waiting for" not in status and status.count("Done: the money is in savings.") == 1
    assert typeset(lab, 7) == 0
    lab.shot("approved", cell=7)


def test_editing_the_arguments_approves_with_changes(lab: LabPage) -> None:
    lab.open_notebook(NOTEBOOKS / "edit-and-restart.ipynb")
    lab.run_all()
    cell = 7
    lab.wait_for_output("Transfer $5,000.00", cell=cell)
    lab.click_button("Edit arguments", cell=cell)
    amount = lab.cell(cell).get_by_label("Amount *", exact=True)
    amount.fill("500")
    amount.press("Tab")
    lab.wait_for_output("Your changes", cell=cell)
    lab.shot("editing", cell=cell)

    lab.click_button("Approve with changes", cell=cell)

    done = lab.wait_for_output("ran with your changes", cell=cell).inner_text()
    assert re.search(rf"Approved (by \S+ )?at {TIME} · transferMoney ran with your changes", done), done
    assert re.search(r"Amount\s+\$5,000\.00\s*→\s*\$500\.00", done), done
    lab.shot("approved-with-changes", cell=cell)


def test_dollars_stay_dollars_and_markdown_renders_inert(lab: LabPage) -> None:
    lab.open_notebook(REPLIES)
    lab.run_all()
    # the notebook's own markdown (\$ in its source), a static output, a live reply
    assert DOLLARS in lab.cell(0).inner_text()
    for cell in (2, 4):
        lab.wait_for_output(DOLLARS, cell=cell)
        assert typeset(lab, cell) == 0
    lab.click_button("Approve", cell=4)
    reply = lab.wait_for_output("print('hi')", cell=4)
    assert DOLLARS in reply.inner_text() and typeset(lab, 4) == 0
    out = lab.cell(4).locator(".jp-Cell-outputArea")
    assert out.locator("table td", has_text="checking").count() >= 1
    assert out.locator("pre code", has_text="print('hi')").count() == 1
    # hostile markdown: raw HTML shown as text, no javascript: link, \style{} not applied
    text = out.inner_text()
    assert "<img src=x onerror=alert(1)>" in text and "[click](javascript:alert(1))" in text
    assert "\\style{color:red}{x}" in text
    assert out.locator("img").count() == 0 and out.locator("a[href^='javascript']").count() == 0
    assert out.locator("a[href='https://genkit.dev']").count() == 1
    assert [m for m in lab.console if "alert" in m] == []
    lab.shot("markdown", cell=4)


def test_a_saved_notebook_reopened_without_its_kernel_shows_the_records(lab: LabPage) -> None:
    path = lab.open_notebook(NOTEBOOKS / "quickstart.ipynb")
    lab.run_all()
    lab.click_button("Approve", cell=7)
    lab.wait_for_output("transferMoney ran", cell=7)
    lab.save()
    lab.server.shutdown_kernels()

    lab.reopen(path)  # a new page: no widget model survives

    record = lab.wait_for_output("transferMoney ran", cell=7).inner_text()
    assert "Done: the money is in savings." in record and "Transfer money" in record
    assert "Error displaying widget" not in lab.notebook.inner_text()
    saved = json.loads((lab.server.root / path).read_text(encoding="utf-8"))
    outputs = [o for o in saved["cells"][7]["outputs"] if o["output_type"] == "display_data"]
    assert outputs and all("application/vnd.jupyter.widget-view+json" not in o["data"] for o in outputs)
    lab.shot("reopened", cell=7)


def test_a_form_never_answered_is_saved_as_waiting_not_as_a_dead_widget(lab: LabPage) -> None:
    path = lab.open_notebook(NOTEBOOKS / "tool-approval.ipynb")
    lab.run_all()
    lab.wait_for_output("Send email", cell=6)
    lab.save()
    lab.server.shutdown_kernels()

    lab.reopen(path)

    shown = lab.wait_for_output("Waiting for an answer", cell=6).inner_text()
    assert "pending(agent)" in shown and "Send email" in shown
    assert "Error displaying widget" not in lab.notebook.inner_text()
    lab.shot("waiting-reopened", cell=6)


def test_the_form_reads_in_the_dark_theme(dark_lab: LabPage) -> None:
    lab = dark_lab
    lab.open_notebook(NOTEBOOKS / "tool-approval.ipynb")
    lab.run_all()
    title = lab.wait_for_output("Send email", cell=6).locator("b", has_text="Send email").first
    color = title.evaluate("(el) => getComputedStyle(el).color")
    back = lab.page.locator(".jp-Notebook").evaluate("(el) => getComputedStyle(el).backgroundColor")
    assert _luminance(color) > 0.6 > 0.2 > _luminance(back), (color, back)  # light text on a dark page
    lab.shot("dark", cell=6)


def _luminance(css: str) -> float:
    r, g, b = (int(x) for x in re.findall(r"\d+", css)[:3])
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255
