"""Hostile schemas and server text stay inert in JupyterLab (tests/browser/fixtures/hostile.ipynb).

The fixture's turn pauses on an approval hold, a respond form and two MCP
elicitations (a form, and a URL-mode request whose URL is ``javascript:``),
with ``<img src=x onerror="window.__pwned=1">`` and dollar amounts in every
schema title, description, const and enum name, in the server's text and in
the model's. With every form open (Edit arguments too), no script ran
(``window.__pwned`` stays unset), no image or ``javascript:`` link exists, the
text is shown as written (not as a formula), and every button is found by its
words alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lab_driver import LabPage

FIXTURES = Path(__file__).resolve().parent / "fixtures"
FORM = 1


def test_hostile_schema_titles_and_server_urls_stay_inert(lab: LabPage) -> None:
    lab.open_notebook(FIXTURES / "hostile.ipynb")
    lab.run_all()
    lab.wait_for_output("the server asks", cell=FORM)
    lab.click_button("Edit arguments", cell=FORM)  # the approval form's fields, const title and all
    out = lab.cell(FORM).locator(".jp-Cell-outputArea")
    lab.wait_for_output("const title", cell=FORM)
    lab.page.wait_for_timeout(1000)  # anything that could run has had its chance
    assert lab.page.evaluate("() => window.__pwned") is None
    assert out.locator("img, svg image, iframe, script").count() == 0
    assert out.locator("a[href^='javascript' i]").count() == 0
    assert out.locator("mjx-container, .MathJax").count() == 0  # "$5 or $6" stays dollars
    shown = out.inner_text()
    assert '<img src=x onerror="window.__pwned=1">const title costs $5 or $6' in shown, shown
    assert "javascript:window.__pwned=1" in shown  # the URL is shown, as text
    for name in ("Approve", "Deny", "Edit arguments", "Send answer", "Accept", "Decline"):
        assert out.get_by_role("button", name=name, exact=True).count() >= 1, name
    assert [m for m in lab.console if "__pwned" in m] == []
    lab.shot("hostile", cell=FORM, output=True)
