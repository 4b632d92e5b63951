"""`make demo`: the banking demo pauses, takes the answer and completes."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from nb_agents import demo


def test_demo_approves_with_yes(capsys: pytest.CaptureFixture[str]) -> None:
    assert demo.main(["--yes", "--offline"]) == 0
    out = capsys.readouterr().out
    assert "pause> the agent wants to run transferMoney: Transfer $500.00 from checking to savings" in out
    assert "Done: the transfer went through (transaction txn-0001)." in out
    assert "Accounts now: checking $700.00, savings $800.00." in out


def test_demo_prompt_answer_no_keeps_the_money() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "nb_agents.demo"],
        input="n\n",
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "NB_AGENTS_MODEL"},
    )
    assert proc.returncode == 0, proc.stderr
    assert "Approve? [y/N]" in proc.stdout
    assert "OK, I did not make the transfer." in proc.stdout
    assert "Accounts now: checking $1,200.00, savings $300.00." in proc.stdout
