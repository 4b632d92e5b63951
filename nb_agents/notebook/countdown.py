"""`Countdown`: a pause's deadline that ticks in the browser, and says when it is reached.

A form's deadline line ("Expires in 14 s (at 14:02); then denied") must move
while a person reads it. Updating an HTML widget from the kernel every second
would send a message a second per form and stall whenever the kernel is busy,
so the line is a tiny anywidget (as `MessageBox` is): the browser counts down
from the deadline (a ``<time>`` element), and when it is reached it says so and
sends an ``expired`` message to the kernel; `on_expired` handlers run, and the
form's `TurnView` applies the declared default (the engine applies it once,
whoever asks first) and turns into a record of what the default did. Text is
set with ``textContent``: nothing here is ever parsed as HTML.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anywidget
import traitlets

__all__ = ["Countdown"]

_ESM = r"""
function words(s) {
  if (s < 60) { return s + " s"; }
  if (s < 3600) { return Math.floor(s / 60) + " min"; }
  if (s < 2 * 86400) {
    const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60);
    return m ? h + " h " + m + " min" : h + " h";
  }
  return Math.floor(s / 86400) + " days";
}
function render({ model, el }) {
  const line = document.createElement("div");
  line.className = "nba-deadline nba-countdown tex2jax_ignore mathjax_ignore";
  line.style.cssText = "margin:2px 0";
  const label = document.createElement("span");
  const rest = document.createElement("span");
  rest.style.cssText = "color:var(--jp-content-font-color2,#666);font-size:90%";
  const before = document.createTextNode(""), after = document.createTextNode("");
  const time = document.createElement("time");
  rest.append(before, time, after);
  line.append(label, document.createTextNode(" "), rest);
  let told = false;
  const tick = () => {
    const deadline = model.get("deadline");
    const at = Date.parse(deadline);
    if (isNaN(at)) { line.style.display = "none"; return; }
    line.style.display = "";
    const left = Math.ceil((at - Date.now()) / 1000);  // "in 1 s" until the deadline itself
    time.dateTime = deadline;
    const clock = { hour: "2-digit", minute: "2-digit", hourCycle: "h23" };  // 14:02, as the records say
    time.textContent = new Date(at).toLocaleTimeString([], clock);
    const then = model.get("then");
    if (left > 0) {
      label.textContent = "Expires";
      label.style.cssText = "color:var(--jp-warn-color0,#b26a00);font-weight:600";
      before.textContent = "in " + words(left) + " (at ";
      after.textContent = "); then " + then;
    } else {
      label.textContent = "Expired";
      label.style.cssText = "color:var(--jp-error-color0,#c62828);font-weight:600";
      before.textContent = "at ";
      after.textContent = ": " + then + " applies";
      if (!told) { told = true; model.send({ event: "expired" }); }
    }
  };
  tick();
  const timer = setInterval(tick, 1000);
  model.on("change:deadline", tick);
  model.on("change:then", tick);
  el.appendChild(line);
  return () => clearInterval(timer);
}
export default { render };
"""


class Countdown(anywidget.AnyWidget):  # type: ignore[misc]  # anywidget ships no type hints for traitlets
    """A deadline that ticks: "Expires in 14 s (at 14:02); then denied", then "Expired at 14:02".

    Args (traits):
        deadline: The deadline, ISO 8601 (``metadata.expiresAt``).
        then: What applies at the deadline, in words ("denied", "approved").

    Example:
        >>> clock = Countdown(deadline="2026-05-03T14:02:00.000Z", then="denied")   # doctest: +SKIP
        >>> clock.on_expired(lambda: print("the default applies"))                 # doctest: +SKIP
    """

    _esm = traitlets.Unicode(_ESM).tag(sync=True)
    deadline = traitlets.Unicode("").tag(sync=True)
    then = traitlets.Unicode("").tag(sync=True)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._expired: list[Callable[[], None]] = []
        self.on_msg(self._handle)

    def on_expired(self, callback: Callable[[], None]) -> None:
        """Call `callback` when the browser's countdown reaches the deadline."""
        self._expired.append(callback)

    def expire(self) -> None:
        """What the browser does at the deadline (for tests and scripts): the callbacks run."""
        for callback in list(self._expired):
            callback()

    def _handle(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if isinstance(content, dict) and content.get("event") == "expired":
            self.expire()
