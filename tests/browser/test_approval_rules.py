""" "Approve always" in a real JupyterLab: the click makes a per-session rule, the next call runs formless.

The notebook is built from notebooks/approval-rules.ipynb's setup cell, then
a held call (its form), the same call again, and the session's audit, each
run on its own so that the second call is made after the click.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lab_driver import LabPage

EXAMPLE = Path(__file__).resolve().parents[2] / "notebooks" / "approval-rules.ipynb"


def _notebook(tmp_path: Path) -> Path:
    example = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    setup = next(c for c in example["cells"] if c["cell_type"] == "code")
    sources = [
        "".join(setup["source"]),
        'form_chat = agent.chat()\nres = await form_chat.send("read payroll")\nres',
        'again = await form_chat.send("read payroll")\n'
        'print(again.finish_reason, "|", again.text, "| forms:", len(again.interrupts))',
        "await agent.audit(form_chat.session_id)",
    ]
    cells = [
        {
            "cell_type": "code",
            "id": f"always-{i}",
            "metadata": {},
            "source": s,
            "outputs": [],
            "execution_count": None,
        }
        for i, s in enumerate(sources)
    ]
    nb = {"cells": cells, "metadata": example["metadata"], "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / "approve-always.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    return path


def test_approve_always_in_the_form_lets_the_next_identical_call_run_without_one(
    lab: LabPage, tmp_path: Path
) -> None:
    lab.open_notebook(_notebook(tmp_path))
    lab.run_cell(0)
    lab.run_cell(1)
    lab.wait_for_output("Read table", cell=1)
    labels = [b.strip() for b in lab.cell(1).locator(".jp-OutputArea-output button").all_inner_texts()]
    assert labels[:5] == ["Approve", "Approve always", "Edit arguments", "Cancel", "Deny"], labels
    lab.shot("form", cell=1)

    lab.click_button("Approve always", cell=1)

    done = lab.wait_for_output("payroll has 12 rows", cell=1).inner_text()
    assert "for the rest of this session" in done, done
    lab.shot("approved-always", cell=1)
    lab.run_cell(2)
    again = lab.wait_for_output("forms:", cell=2).inner_text()
    assert "stop | payroll has 12 rows. | forms: 0" in again, again
    assert lab.cell(2).locator(".jp-OutputArea-output button").count() == 0
    lab.run_cell(3)
    audit = lab.wait_for_output("approved by approve always", cell=3).inner_text()
    assert "approved always (this session): runs without asking from now on" in audit, audit
    assert "always-" not in audit and "denyed" not in audit, audit  # rule ids are internals
    lab.shot("audit", cell=3)
