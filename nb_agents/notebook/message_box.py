"""`MessageBox`: the chat's text box, where Enter sends and Shift+Enter starts a new line.

ipywidgets' ``Textarea`` reports no keys and its ``Text`` is one line only,
so the box is a tiny anywidget (the documented way to write a custom widget
without a build step): a ``<textarea>`` whose Enter sends a ``submit`` message
to the kernel. Keys stay in the box (JupyterLab's shortcuts, Shift+Enter
"run cell" among them, never see them), and the box grows with its text.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anywidget
import traitlets

__all__ = ["MessageBox"]

_ESM = r"""
function render({ model, el }) {
  const box = document.createElement("textarea");
  box.className = "nba-message-box";
  box.rows = 1;
  box.setAttribute("data-lm-suppress-shortcuts", "true");
  box.style.cssText = "width:100%;box-sizing:border-box;resize:none;min-height:2.4em;max-height:12em;" +
    "padding:6px 8px;font:inherit;border:1px solid var(--jp-border-color1,#bbb);border-radius:4px;" +
    "color:var(--jp-ui-font-color0,#111);background:var(--jp-layout-color0,#fff)";
  const grow = () => {
    box.style.height = "auto";
    box.style.height = Math.min(box.scrollHeight + 2, 200) + "px";
  };
  const sync = () => {
    if (box.value !== model.get("value")) { box.value = model.get("value"); }
    box.placeholder = model.get("placeholder");
    box.setAttribute("aria-label", model.get("label") || model.get("placeholder"));
    box.disabled = model.get("disabled");
    grow();
  };
  box.addEventListener("input", () => { model.set("value", box.value); model.save_changes(); grow(); });
  box.addEventListener("keydown", (event) => {
    event.stopPropagation();
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      const text = box.value;
      box.value = "";  // cleared at once; the kernel puts the text back if it cannot send it yet
      model.set("value", "");
      model.save_changes();
      model.send({ event: "submit", text: text });
      grow();
    }
  });
  box.addEventListener("keypress", (event) => event.stopPropagation());
  model.on("change:value", sync);
  model.on("change:placeholder", sync);
  model.on("change:disabled", sync);
  el.style.flex = "1 1 auto";
  el.appendChild(box);
  sync();
}
export default { render };
"""


class MessageBox(anywidget.AnyWidget):  # type: ignore[misc]  # anywidget ships no type hints for traitlets
    """A multi-line text box: Enter sends (`on_submit` handlers run), Shift+Enter adds a line.

    Example:
        >>> box = MessageBox(placeholder="Message")                 # doctest: +SKIP
        >>> box.on_submit(lambda text: print("sent", text))         # doctest: +SKIP
    """

    _esm = traitlets.Unicode(_ESM).tag(sync=True)
    value = traitlets.Unicode("").tag(sync=True)
    placeholder = traitlets.Unicode("Message").tag(sync=True)
    label = traitlets.Unicode("Message").tag(sync=True)
    disabled = traitlets.Bool(False).tag(sync=True)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._submit: list[Callable[[str], None]] = []
        self.on_msg(self._handle)

    def on_submit(self, callback: Callable[[str], None]) -> None:
        """Call `callback` with the text when the person presses Enter.

        The browser empties the box as Enter is pressed; a callback that cannot send the
        text yet puts it back (``box.value = text``).
        """
        self._submit.append(callback)

    def submit(self, text: str | None = None) -> None:
        """Press Enter (what the browser does; for tests and scripts): the box empties, callbacks run."""
        text = self.value if text is None else text
        self.value = ""
        for callback in list(self._submit):
            callback(text)

    def _handle(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if isinstance(content, dict) and content.get("event") == "submit":
            text = content.get("text")
            self.submit(text if isinstance(text, str) else self.value)
