"""A Jupyter server extension: notebooks are saved with nb_agents' records, not dead widgets.

A widget's output holds the widget view and, beside it, a static record (text
and HTML). JupyterLab shows the widget whenever the view is there, even when
its model is gone: a notebook reopened without its kernel says "Error
displaying widget: model not found". A turn that was answered already
replaced its output with the record (`nb_agents.notebook`), but a form still
waiting, a chat, a pending listing cannot: they are live until the kernel
ends. So on every save this extension drops the widget view from the outputs
nb_agents marked (output metadata ``nb_agents``), and the saved file keeps
the record: "Waiting for an answer ... run `pending(agent)`", the transcript.
The notebook open in the browser is not changed; only the file is.

It is enabled by the config file pip installs (``jupyter_server_config.d/nb_agents.json``);
``jupyter server extension disable nb_agents.jupyter_extension`` turns it off.
It imports no widget code: it runs in the Jupyter server's process.
"""

from __future__ import annotations

from typing import Any

from ._display import LIVE_OUTPUT_KEY

__all__ = ["WIDGET_MIME", "keep_records"]

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


def keep_records(model: dict[str, Any], **_kwargs: Any) -> None:
    """The pre-save hook: drop the widget view from nb_agents' outputs that carry a record.

    Example:
        >>> out = {"output_type": "display_data", "metadata": {"nb_agents": {"live": True}},
        ...        "data": {"text/html": "<b>record</b>", WIDGET_MIME: {"model_id": "x"}}}
        >>> nb = {"type": "notebook", "content": {"cells": [{"cell_type": "code", "outputs": [out]}]}}
        >>> keep_records(nb); sorted(out["data"])
        ['text/html']
    """
    if model.get("type") != "notebook" or not isinstance(model.get("content"), dict):
        return
    for cell in model["content"].get("cells") or []:
        for output in cell.get("outputs") or [] if isinstance(cell, dict) else []:
            meta = output.get("metadata") or {}
            data = output.get("data") or {}
            if isinstance(meta, dict) and LIVE_OUTPUT_KEY in meta and "text/html" in data:
                data.pop(WIDGET_MIME, None)


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "nb_agents.jupyter_extension"}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    serverapp.contents_manager.register_pre_save_hook(keep_records)
    serverapp.log.info("nb_agents: notebooks are saved with records, not dead widgets")
