"""`ElicitationForm`: the form for an MCP server's question in the middle of a tool call.

An elicitation interrupt (`nb_agents.mcp.ElicitationRequest`) carries the
server's message and the JSON schema of the answer. The form shows who asks
(the server, and the tool whose call is waiting), the message, one field per
property of the schema (built by `nb_agents.notebook.fields`, each with its
title, a ``*`` when required and its description beneath), and three buttons:

* **Accept** sends the fields' values, once they fit the schema (a value that
  does not is shown in the form and nothing is sent);
* **Decline** and **Cancel** send no content.

MCP's elicitation schemas are flat objects of strings, numbers, booleans and
enums; the titled enum forms (``oneOf`` of ``const``/``title``, legacy
``enumNames``) become dropdowns that show the titles. A ``url`` request shows
its link instead of fields (a link only when it is http(s): `link_html`, the
one URL policy; a ``javascript:`` URL shows as text). Everything the server
wrote is data, escaped with `esc`. Like `InterruptForm`, the form only records its
`Answer` and calls ``on_answer``; `TurnView` sends it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ipywidgets as widgets

from ..interrupts import AgentInterrupt
from ..mcp.elicitation import ElicitationRequest
from ..render import error_html, interrupt_summary
from ..render._html import NO_TYPESET, esc, link_html
from ..tools import Tool
from .answer import Answer
from .answer_box import AnswerBox
from .controls import button
from .fields import Field, FieldError, schema_field

__all__ = ["ElicitationForm", "is_elicitation", "normalized"]

_OK = "color:var(--jp-success-color1,#2e7d32)"
_ASK = (
    "border-left:4px solid var(--jp-brand-color1,#1976d2);padding:6px 12px;margin:4px 0;"
    "background:var(--jp-layout-color1,#fff)"
)


def is_elicitation(interrupt: AgentInterrupt) -> bool:
    """Whether `interrupt` is an MCP server's elicitation request."""
    return ElicitationRequest.claim(interrupt) is not None


def _titled(options: Any) -> tuple[list[Any], list[str]] | None:
    """``oneOf``/``anyOf`` of ``{const, title}`` as (values, titles), else None."""
    if not isinstance(options, list) or not options:
        return None
    if not all(isinstance(o, dict) and "const" in o for o in options):
        return None
    return [o["const"] for o in options], [str(o.get("title", o["const"])) for o in options]


def normalized(prop: Any) -> dict[str, Any]:
    """One property of a requested schema in the shapes `schema_field` knows.

    Example:
        >>> normalized({"type": "string", "oneOf": [{"const": "h1", "title": "Superman"}]})
        {'type': 'string', 'enum': ['h1'], 'enumNames': ['Superman']}
    """
    if not isinstance(prop, dict):
        return {}
    out = dict(prop)
    titled = _titled(out.pop("oneOf", None) or out.pop("anyOf", None))
    if titled is not None:
        out["enum"], out["enumNames"] = titled
    items = out.get("items")
    if isinstance(items, dict):
        inner = _titled(items.get("anyOf") or items.get("oneOf"))
        if inner is not None:
            out["items"] = {"type": "string", "enum": inner[0]}
    return out


class ElicitationForm(AnswerBox):
    """The form for one elicitation interrupt; records an `Answer` when a button is pressed.

    Args:
        interrupt: The elicitation interrupt (see `is_elicitation`).
        tool: Its `Tool`, if known (unused: the schema comes with the question).
        on_answer: Called with the form once it has recorded an answer.

    Attributes:
        request: The `ElicitationRequest`.
        fields: The `Field` of each property, by name.
        accept_button, decline_button, cancel_button: the controls.
        answer: The recorded `Answer`, or None.

    Example:
        >>> form = ElicitationForm(res.interrupts[0])        # doctest: +SKIP
        >>> form.accept_button.click(); form.answer.part     # doctest: +SKIP
    """

    mode = "elicitation"

    def __init__(
        self,
        interrupt: AgentInterrupt,
        tool: Tool | None = None,
        *,
        on_answer: Callable[[Any], None] | None = None,
    ) -> None:
        request = ElicitationRequest.claim(interrupt)
        if request is None:
            raise ValueError(f"interrupt {interrupt.name!r} is not an MCP elicitation request")
        super().__init__(interrupt, tool, on_answer)
        self.summary = interrupt_summary(interrupt.part)  # what the turn's record says was asked
        self.request = request
        self.fields: dict[str, Field] = {}
        self.error = widgets.HTML()
        self.status = widgets.HTML()
        self.accept_button = button("Accept", "success")
        self.decline_button = button("Decline", "warning")
        self.cancel_button = button("Cancel")
        self.accept_button.on_click(lambda _: self._record("accept"))
        self.decline_button.on_click(lambda _: self._record("decline"))
        self.cancel_button.on_click(lambda _: self._record("cancel"))
        self.change_button = button("Change answer")
        self.change_button.on_click(lambda _: None if self.locked else self.reset())
        self.change_button.layout.display = "none"
        buttons = widgets.HBox([self.accept_button, self.decline_button, self.cancel_button])
        self.children = [self._head(), *self._rows(), buttons, self.error, self.status, self.change_button]
        self.add_class("nba-elicitation")
        self.add_class("nba-form")

    def _head(self) -> Any:
        r = self.request
        text = (
            f'<div class="{NO_TYPESET}" style="{_ASK}"><div>MCP server <b>{esc(r.server)}</b> asks, '
            f"while running <code>{esc(r.tool)}</code>:</div>"
            f'<div style="font-size:110%;margin:4px 0;white-space:pre-wrap">{esc(r.message)}</div>'
        )
        if r.mode == "url" and r.url:
            text += f"<div>Open {link_html(r.url)}, then press Accept when you are done.</div>"
        return widgets.HTML(value=text + "</div>")

    def _rows(self) -> list[Any]:
        schema = self.request.requested_schema or {}
        required = set(schema.get("required") or [])
        rows = []
        for name, raw in (schema.get("properties") or {}).items():
            prop = normalized(raw)
            title = str(prop.get("title") or name) + (" *" if name in required else "")
            field = schema_field(prop, label=title, required=name in required)
            self.fields[name] = field
            rows.append(field.row)  # the field, its description as a hint, and its error
        return rows

    # -- answering ---------------------------------------------------------------------------
    def content(self) -> dict[str, Any]:
        """The fields' values (empty optional fields left out); raises `FieldError`."""
        out: dict[str, Any] = {}
        for name, field in self.fields.items():
            value = field.get()
            if value is not None:
                out[name] = value
        return out

    def _build(self, action: str) -> Answer:
        if action != "accept":
            part = self.request.decline() if action == "decline" else self.request.cancel()
            return Answer("restart", part, "declined" if action == "decline" else "cancelled")
        content = self.content() if self.request.mode != "url" else None
        try:
            problems = self.request.check(content) if content is not None else []
        except ImportError:  # no jsonschema here: the server checks the answer itself
            problems = []
        if problems:
            raise FieldError("the answer does not fit what the server asked: " + "; ".join(problems))
        return Answer("restart", self.request.accept(content), "accepted")

    def _record(self, action: str) -> None:
        if self.answer is not None or self.locked:
            return  # a stale click: this form has already answered
        try:
            answer = self._build(action)
        except FieldError as exc:
            self.error.value = error_html(None, exc.message)
            return
        self.error.value = ""
        self.answer = answer
        self.set_disabled(True)
        self.status.value = f'<span style="{_OK}">✓ {esc(answer.label)}</span>'
        self.change_button.layout.display = None
        if self.on_answer is not None:
            self.on_answer(self)

    # -- state -------------------------------------------------------------------------------
    def set_disabled(self, disabled: bool) -> None:
        """Disable or enable every control of the form."""
        for control in (self.accept_button, self.decline_button, self.cancel_button):
            control.disabled = disabled
        for field in self.fields.values():
            field.set_disabled(disabled)

    def __repr__(self) -> str:
        return f"ElicitationForm({self.request.server!r}, {self.request.tool!r}, answer={self.answer!r})"
