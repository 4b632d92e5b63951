"""The server extension: a saved notebook keeps nb_agents' records, not widget views without a model."""

from __future__ import annotations

import copy
from typing import Any

from nb_agents.jupyter_extension import WIDGET_MIME, _load_jupyter_server_extension, keep_records

VIEW = {"model_id": "abc", "version_major": 2, "version_minor": 0}


def output(meta: dict[str, Any] | None, **data: Any) -> dict[str, Any]:
    return {"output_type": "display_data", "metadata": meta or {}, "data": data}


def test_only_nb_agents_outputs_with_a_record_lose_their_widget_view() -> None:
    ours = output(
        {"nb_agents": {"live": True}}, **{"text/html": "<b>Waiting for an answer</b>", WIDGET_MIME: VIEW}
    )
    other = output(None, **{"text/html": "<b>someone else's widget</b>", WIDGET_MIME: VIEW})
    bare = output({"nb_agents": {"live": True}}, **{WIDGET_MIME: VIEW})  # nothing to show instead: kept
    nb = {"cells": [{"cell_type": "code", "outputs": [ours, other, bare]}, {"cell_type": "markdown"}]}
    model = {"type": "notebook", "content": nb}
    keep_records(model, path="x.ipynb")
    assert ours["data"] == {"text/html": "<b>Waiting for an answer</b>"}
    assert WIDGET_MIME in other["data"] and WIDGET_MIME in bare["data"]


def test_other_files_are_left_alone() -> None:
    model = {"type": "file", "content": "text"}
    before = copy.deepcopy(model)
    keep_records(model)
    assert model == before


def test_loading_registers_the_pre_save_hook() -> None:
    class Contents:
        hooks: list[Any] = []

        def register_pre_save_hook(self, hook: Any) -> None:
            self.hooks.append(hook)

    class Log:
        def info(self, *_a: Any) -> None:
            pass

    class App:
        contents_manager = Contents()
        log = Log()

    _load_jupyter_server_extension(App())
    assert App.contents_manager.hooks == [keep_records]
