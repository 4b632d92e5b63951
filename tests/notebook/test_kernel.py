"""In a real IPython kernel: a response displays as a widget, and a click (a comm
message, as JupyterLab sends it) resumes the turn on the kernel's own loop."""

from __future__ import annotations

import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ipykernel")
from jupyter_client.manager import start_new_kernel  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]

SETUP = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, "tests")
    from helpers import text_response, tool_call_response
    from pydantic import BaseModel
    import nb_agents as nba
    from nb_agents.testing import ScriptedModel

    class Ask(BaseModel):
        question: str

    class Reply(BaseModel):
        approved: bool

    ask = nba.define_interrupt(name="askUser", input_schema=Ask, output_schema=Reply)
    model = ScriptedModel(
        [tool_call_response(("askUser", "a1", {"question": "ok?"})), text_response("done in the kernel")]
    )
    agent = nba.define_agent("k", model=model, tools=[ask], store=nba.InMemorySessionStore())
    res = await agent.chat().send("go")
    res
    """
)


class Kernel:
    def __init__(self) -> None:
        self.manager, self.client = start_new_kernel(kernel_name="python3", cwd=str(ROOT))

    def run(self, code: str) -> list[tuple[str, dict[str, Any]]]:
        """Execute `code`; the outputs it produced, once the kernel is idle again."""
        msg_id = self.client.execute(code)
        outs: list[tuple[str, dict[str, Any]]] = []
        while True:
            msg = self.client.get_iopub_msg(timeout=60)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind = msg["msg_type"]
            if kind == "error":
                raise AssertionError("\n".join(msg["content"]["traceback"]))
            if kind in ("stream", "execute_result", "display_data"):
                outs.append((kind, msg["content"]))
            if kind == "status" and msg["content"]["execution_state"] == "idle":
                return outs

    def printed(self, code: str) -> str:
        return "".join(c["text"] for kind, c in self.run(code) if kind == "stream")

    def click(self, model_id: str) -> None:
        """What the frontend sends when a button is clicked."""
        data = {"method": "custom", "content": {"event": "click"}}
        msg = self.client.session.msg("comm_msg", {"comm_id": model_id, "data": data})
        self.client.shell_channel.send(msg)

    def close(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)


@pytest.fixture(scope="module")
def kernel() -> Iterator[Kernel]:
    k = Kernel()
    try:
        yield k
    finally:
        k.close()


def test_a_paused_response_displays_as_a_widget_and_a_click_resumes_it(kernel: Kernel) -> None:
    # displayed with a display id, so the view can later replace the output with its record
    [(kind, shown)] = [o for o in kernel.run(SETUP) if o[0] == "display_data"]
    assert "application/vnd.jupyter.widget-view+json" in shown["data"]
    assert "Ask user" in shown["data"]["text/html"] and shown["transient"]["display_id"]
    code = "from nb_agents.notebook import TurnView\nview = TurnView(res)\n"
    button = kernel.printed(code + "print(view.forms[0].approve_button.model_id)").strip()
    kernel.click(button)
    # shell messages run in order: the click handler has started the resume task by now
    out = kernel.printed("done = await view.task\nprint(done.text, model.calls)")
    assert out.strip() == "done in the kernel 2"


def test_pending_in_a_sync_cell(kernel: Kernel) -> None:
    kernel.run(SETUP)
    out = kernel.printed(
        "from nb_agents.notebook import pending\nwaiting = pending(agent)\nprint(waiting.task is not None)"
    )
    assert out.strip() == "True"
    assert kernel.printed("await waiting.task\nprint(len(waiting.views))").strip() == "1"


def test_a_form_answered_by_a_later_cell_stops_asking(kernel: Kernel) -> None:
    """Run All: a cell shows the form, a later cell answers it in code; the form becomes its record."""
    [(_, shown)] = [o for o in kernel.run(SETUP) if o[0] == "display_data"]
    display_id = shown["transient"]["display_id"]
    kernel.run("later = await res.chat.resume(respond=[res.interrupts[0].respond({'approved': True})])")
    # after that cell, the form re-read the audit and replaced its output with its record
    deadline = time.monotonic() + 60
    while True:
        msg = kernel.client.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
        content = msg["content"]
        if msg["msg_type"] == "update_display_data" and content["transient"]["display_id"] == display_id:
            break
    assert "application/vnd.jupyter.widget-view+json" not in content["data"]  # no live buttons left
    assert "Already answered (approved" in content["data"]["text/html"]
    assert kernel.printed("print(later.text)").strip() == "done in the kernel"
