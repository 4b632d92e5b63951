"""ChatWidget in JupyterLab: Enter sends, Shift+Enter adds a line, Stop aborts, history survives a restart.

tests/browser/fixtures/chat.ipynb defines an agent on SQLite (in a temp folder
this test empties first) whose model streams a markdown echo; "slow" in a
message makes it wait until stopped. Cell 2 shows
``ChatWidget(agent.chat(session_id="browser-chat"))``.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lab_driver import LabPage

CHAT = Path(__file__).resolve().parent / "fixtures" / "chat.ipynb"
BOX = "Message"


def test_enter_sends_stop_aborts_and_the_history_comes_back_after_a_restart(lab: LabPage) -> None:
    shutil.rmtree(Path(tempfile.gettempdir()) / "nb_agents-browser-chat", ignore_errors=True)
    lab.open_notebook(CHAT)
    lab.run_all()

    lab.type_into(BOX, "first line", cell=2)
    lab.press(BOX, "Shift+Enter", cell=2)  # a new line, nothing sent
    lab.type_into(BOX, "second line", cell=2)
    assert "You said" not in lab.output_text(2)
    lab.press(BOX, "Enter", cell=2)

    out = lab.cell(2).locator(".jp-Cell-outputArea")
    lab.wait_for_output("You said:", cell=2)
    lab._wait(lambda: out.locator("td", has_text="2").first.wait_for(), "the reply's table never rendered")
    # the table shows while the reply still streams: Stop goes away once the turn has ended (pressed
    # before, Enter would leave the next message in the box and Stop would end this reply instead)
    lab.wait_for_no_button("Stop", cell=2)
    items = out.locator("li")
    assert [items.nth(i).inner_text() for i in range(items.count())] == ["first line", "second line"]
    assert lab.cell(2).get_by_label(BOX, exact=True).input_value() == ""  # the box is cleared
    lab.shot("replied", cell=2)

    lab.type_into(BOX, "a slow one", cell=2)
    lab.press(BOX, "Enter", cell=2)
    lab.click_button("Stop", cell=2)
    stopped = lab.wait_for_output("Stopped.", cell=2).locator(".nba-chat-note", has_text="Stopped.")
    # the transcript keeps the newest message in view (it scrolls, the old ones go up)
    seen = stopped.evaluate(
        "(el) => { const s = el.getBoundingClientRect(), b = el.closest('.nba-chat').getBoundingClientRect();"
        " return s.bottom <= b.bottom && s.top >= b.top; }"
    )
    assert seen, "the newest message is scrolled out of view"
    lab.shot("stopped", cell=2)

    lab.restart_kernel()
    lab.run_cell(1)
    lab.run_cell(2)  # a new widget on the same stored session: the conversation is read back

    history = lab.wait_for_output("second line", cell=2).inner_text()
    assert (
        "You said:" in history
        and "first line" in history
        and history.index("first") < history.index("You said")
    )
    lab.shot("history", cell=2)


CHAT_ELSEWHERE = Path(__file__).resolve().parent / "fixtures" / "chat_elsewhere.ipynb"


def test_a_question_answered_in_another_cell_moves_the_chat_on_from_that_answer(lab: LabPage) -> None:
    """lee approves the chat's held payment in the next cell; once that cell has run the chat
    shows lee's answer and the reply, and the next message goes on from that reply."""
    lab.open_notebook(CHAT_ELSEWHERE)
    lab.run_cell(1)
    lab.type_into(BOX, "Pay the Acme bill", cell=1)
    lab.press(BOX, "Enter", cell=1)
    lab.wait_for_output("Waiting for your answer", cell=1)

    lab.run_cell(2)  # lee approves it from another chat; nobody clicks here
    lab.wait_for_output("lee approved Acme", cell=2)
    shown = lab.wait_for_output("Done: paid Acme", cell=1).inner_text()
    assert "Already answered (approved by lee at" in shown, shown
    out = lab.cell(1).locator(".jp-OutputArea-output")
    assert out.get_by_role("button", name="Approve", exact=True).count() == 0
    lab.shot("followed", cell=1, output=True)

    lab.type_into(BOX, "thanks", cell=1)
    lab.press(BOX, "Enter", cell=1)
    reply = lab.wait_for_output("You said 'thanks'", cell=1).inner_text()
    assert "I said 'Done: paid Acme' before that." in reply, reply
    lab.run_cell(3)
    assert "runs: ['Acme']" in lab.wait_for_output("runs:", cell=3).inner_text()


TURN_ELSEWHERE = Path(__file__).resolve().parent / "fixtures" / "turn_elsewhere.ipynb"


def test_a_chat_whose_form_was_answered_in_another_cell_sends_on_from_that_answer(lab: LabPage) -> None:
    """A plain `chat.send` shows its form; lee approves it in the next cell. Once that cell has
    run, the form says lee answered, and the next `chat.send` goes on from lee's answer."""
    lab.open_notebook(TURN_ELSEWHERE)
    lab.run_cell(1)
    lab.wait_for_output("Waiting for your answer", cell=1)
    lab.run_cell(2)  # nobody clicks here
    lab.wait_for_output("lee approved Acme", cell=2)
    closed = lab.wait_for_output("Already answered (approved by lee at", cell=1).inner_text()
    assert "snapshot" not in closed, closed
    out = lab.cell(1).locator(".jp-OutputArea-output")
    assert out.get_by_role("button", name="Approve", exact=True).count() == 0
    lab.shot("answered-elsewhere", cell=1, output=True)
    lab.run_cell(3)
    reply = lab.wait_for_output("You said 'thanks'", cell=3).inner_text()
    assert "I said 'Done: paid Acme' before that." in reply, reply
    lab.run_cell(4)
    assert "runs: ['Acme']" in lab.wait_for_output("runs:", cell=4).inner_text()
