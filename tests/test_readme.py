"""The README's Python examples run as written, in order, like notebook cells."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_examples_run_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert len(BLOCKS) >= 2
    monkeypatch.chdir(tmp_path)  # examples may write files (agents.db)
    namespace: dict[str, object] = {"__name__": "readme"}
    outputs = []
    for code in BLOCKS:
        exec(compile(code, str(README), "exec"), namespace)
        outputs.append(capsys.readouterr().out)
    assert "interrupted" in outputs[0] and "Done." in outputs[0]
    assert "alice ['transferMoney']" in outputs[1]
    assert "[('transferMoney', 'restart', {'approved': True}, 'ana')]" in outputs[1]
    retried = next(out for out in outputs if "bank offline" in out)  # one failed attempt, replayed
    assert retried.count("RuntimeError: bank offline") == 2 and retried.endswith("Done. 1\n")
    assert "interrupted transferMoney" in outputs[-1] and "Done. completed" in outputs[-1]


def test_the_readme_opens_with_the_demo_and_lists_every_example_notebook() -> None:
    text = README.read_text()
    headings = re.findall(r"^## (.+)$", text, flags=re.M)
    assert headings[:2] == ["The first ten minutes", "The example notebooks"], headings
    table = text.split("## The example notebooks", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"^\| `([\w-]+)` \|", table, flags=re.M))
    notebooks = {p.stem for p in (README.parent / "notebooks").glob("*.ipynb")}
    assert listed == notebooks, f"missing {sorted(notebooks - listed)}, stale {sorted(listed - notebooks)}"
    assert "(https://mybinder.org/badge_logo.svg)" in text.split("## ", 1)[0]  # the Binder badge, on top
