"""notebooks/chat.ipynb in JupyterLab: the chat box as a newcomer meets it, in light and dark.

Cell 3 shows ``ChatWidget(agent, examples=[...])``: a header naming the agent,
an empty state saying what to do with two examples to click. Clicking one sends
it and the reply streams in; a transfer asks for approval in the conversation,
and approving it lets the reply go on. The box grows with the conversation (a
short one needs no scrolling; a long one scrolls at 70% of the window's height).
Cell 5 shows a conversation read back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from test_example_notebooks import NOTEBOOKS

if TYPE_CHECKING:
    from lab_driver import LabPage

BOX, READ_BACK = 3, 5


@pytest.mark.parametrize("theme", ["lab", "dark_lab"], ids=["light", "dark"])
def test_the_chat_box_says_what_to_do_and_a_conversation_with_a_form_reads_at_a_glance(
    request: pytest.FixtureRequest, theme: str
) -> None:
    lab: LabPage = request.getfixturevalue(theme)
    lab.open_notebook(NOTEBOOKS / "chat.ipynb")
    lab.run_all()

    chat = lab.cell(BOX).locator(".nba-chat")
    empty = lab.wait_for_output("Ask bankingAgent something", cell=BOX)
    header = chat.locator(".nba-chat-header").inner_text()
    assert "bankingAgent" in header and "moves money" in header, header
    lab.shot("empty", cell=BOX)

    lab.click_button("What is my balance?", cell=BOX)
    lab.wait_for_output("Checking holds $1,200.00", cell=BOX)
    lab._wait(lambda: empty.locator(".nba-chat-empty").wait_for(state="hidden"), "the empty state stayed")
    fits = chat.evaluate(
        "(el) => [...el.querySelectorAll('*')].filter((n) => getComputedStyle(n).overflowY === 'auto')"
        ".every((n) => n.scrollHeight <= n.clientHeight + 1)"
    )
    assert fits, "a short conversation fits: the box grows with it before it scrolls"
    lab.shot("replied", cell=BOX)

    lab.type_into("Message", "Transfer $500 to savings", cell=BOX)
    lab.press("Message", "Enter", cell=BOX)
    lab.wait_for_output("Transfer money", cell=BOX)
    lab.shot("form", cell=BOX)
    lab.click_button("Approve", cell=BOX)
    shown = lab.wait_for_output("Done: moved $500.00 to savings", cell=BOX).inner_text()
    assert "Checking now holds $700.00" in shown and "Error" not in shown, shown
    lab.shot("answered", cell=BOX)

    read_back = lab.wait_for_output("What is my balance?", cell=READ_BACK).inner_text()
    assert "getBalance" in read_back and "Checking holds $1,200.00" in read_back, read_back
    assert "no result yet" not in read_back
    lab.shot("read-back", cell=READ_BACK)
