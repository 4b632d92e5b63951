"""`Inbox([agent, ...])`: every interrupt waiting for an answer, across sessions and agents, as rows.

One row per waiting interrupt (`nb_agents.listings.InboxItem`): what it asks
(the summary the forms lead with, shortened), which agent and who asked, how
long it has waited and its deadline, both ticking while the inbox is shown.
Filters hide rows (by tool, by agent, by age). Select rows, then **Approve
selected**, **Deny selected** or **Cancel selected**; a row's own choice (its
dropdown) overrides the batch's verb for that row, and choosing one selects
the row. A batch goes out through `nb_agents.inbox.answer_items`: one resume
per paused turn, so each answer takes effect exactly once, also when the
batch is sent twice (a second click while it goes out is ignored; one sent
again later replays). Answered rows leave: the inbox reads the stores again
after each batch, and on Refresh.

A question that needs an answer of its own (a form's fields) offers only the
verbs that fit it; answer it in its own form (`pending(agent)`).

Example:
    >>> from nb_agents.notebook import Inbox                   # doctest: +SKIP
    >>> inbox = Inbox([bank, support], answered_by="lee")       # doctest: +SKIP
    >>> inbox                                                   # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import ipywidgets as widgets

from .._display import static_mode
from .._sync import start as spawn
from ..agent import Agent
from ..errors import NbAgentsError
from ..inbox import VERBS, Outcome, Verb, answer_items, quick_answer, verbs_for
from ..interrupts import ApprovalHold
from ..listings import InboxItem
from ..protocol import BaseAgent
from ..render._html import BOX, MUTED, NO_TYPESET, badge, esc
from ..render.deadline import deadline_words, time_left
from ._bundle import WithStaticFallback
from ._reading import FirstRead
from .controls import REASON_HINT, button
from .identity import local_user
from .inbox_report import report_html

__all__ = ["Inbox", "InboxRow"]

_AGES = {"any age": None, "over 1 min": 60.0, "over 10 min": 600.0, "over 1 h": 3600.0, "over 1 day": 86400.0}
_LABELS = {"approve": "Approve", "deny": "Deny", "cancel": "Cancel"}
_ALL = "all"


def _short(value: Any, limit: int = 40) -> str:
    text = value if isinstance(value, str) else str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def row_html(item: InboxItem) -> str:
    """A row's text: title, agent and who asked, the question, the arguments (all escaped)."""
    s = item.summary
    who = f" · asked by {esc(item.requested_by)}" if item.requested_by else ""
    held = isinstance(item.interrupt, ApprovalHold)
    mark = badge("needs approval" if held else "needs an answer", "wait")
    head = f'{mark}<b>{esc(s.title)}</b> <span style="{MUTED}">· {esc(item.agent_name)}{who}</span>'
    args = " · ".join(f"{esc(label)}: {esc(_short(value))}" for label, value, _ in s.rows[:4])
    # a held call's question is the same sentence on every row: its badge says it
    question = f"<div>{esc(_short(s.question, 120))}</div>" if s.question and not held else ""
    return f'<div class="nba-inbox-row {NO_TYPESET}">{head}{question}<div style="{MUTED}">{args}</div></div>'


def when_text(item: InboxItem) -> str:
    """How long it has waited and its deadline ("" in static mode: stored outputs must not change)."""
    if static_mode():
        return ""
    age = item.age
    parts = [f"waiting {time_left(age.total_seconds())}" if age is not None else ""]
    s = item.summary
    if s.expires_at:
        parts.append(deadline_words(s.expires_at, s.on_expiry))
    return " · ".join(p for p in parts if p)


class InboxRow(widgets.HBox):  # type: ignore[misc]  # ipywidgets ships no type hints
    """One waiting interrupt: a checkbox, its text, its age and deadline, and its own verb."""

    def __init__(self, item: InboxItem) -> None:
        super().__init__(layout=widgets.Layout(align_items="center", border_bottom="1px solid #8884"))
        self.item = item
        self.selected = widgets.Checkbox(value=False, indent=False, layout=widgets.Layout(width="2em"))
        self.text = widgets.HTML(row_html(item), layout=widgets.Layout(flex="1 1 auto"))
        self.when = widgets.HTML(when_text(item), layout=widgets.Layout(width="16em"))
        options = [("as clicked", "")] + [(_LABELS[v], v) for v in verbs_for(item)]
        self.choice = widgets.Dropdown(options=options, value="", layout=widgets.Layout(width="9em"))
        self.choice.observe(self._chosen, names="value")
        self.children = [self.selected, self.text, self.when, self.choice]

    def _chosen(self, change: dict[str, Any]) -> None:
        if change["new"]:
            self.selected.value = True  # choosing a verb for a row selects it

    @property
    def override(self) -> Verb | None:
        value = self.choice.value
        return value if value in VERBS else None  # type: ignore[no-any-return]

    def tick(self) -> None:
        self.when.value = when_text(self.item)


class Inbox(FirstRead, WithStaticFallback, widgets.VBox):  # type: ignore[misc]  # ipywidgets ships no type hints
    """Every waiting interrupt of `agents`, as rows to answer in batches (see the module docstring).

    Args:
        agents: One agent or several, local (`Agent`) or remote (`RemoteAgent`).
        context: The request context to list and answer with (local agents;
            a remote agent's server derives it from the request).
        answered_by: Who answers, for the audit (default: this notebook's user).
        tool: List only interrupts of this tool (or these tools).
        older_than: List only turns waiting at least this long.
        tick: Seconds between updates of ages and deadlines while shown (None: never).

    Attributes:
        rows: The `InboxRow` of each waiting interrupt listed.
        task: The read or batch in progress (await it).
        outcomes: What the last batch came to (`nb_agents.inbox.Outcome` per turn).
    """

    def __init__(
        self,
        agents: BaseAgent | Sequence[BaseAgent],
        *,
        context: dict[str, Any] | None = None,
        answered_by: str | None = None,
        tool: str | Sequence[str] | None = None,
        older_than: timedelta | float | None = None,
        tick: float | None = 1.0,
    ) -> None:
        super().__init__()
        self.agents: list[BaseAgent] = [agents] if isinstance(agents, BaseAgent) else list(agents)
        if not self.agents or not all(isinstance(a, BaseAgent) for a in self.agents):
            raise TypeError("Inbox takes an agent or a list of agents (local or remote)")
        self.context = context
        self.answered_by = answered_by if answered_by is not None else local_user()
        self._filters = {"tool": tool, "older_than": older_than}
        self.tick_seconds = tick
        self.rows: list[InboxRow] = []
        self.outcomes: list[Outcome] = []
        self.task: asyncio.Task[Any] | None = None
        self._sending = False
        self._ticker: asyncio.Task[None] | None = None
        self.header = widgets.HTML("<i>reading what waits…</i>")
        self.refresh_button = button("Refresh")
        self.refresh_button.on_click(lambda _: self._soon(self.refresh()))
        self.tool_filter = widgets.Dropdown(options=[("All tools", _ALL)], value=_ALL, description="Tool")
        self.agent_filter = widgets.Dropdown(
            options=[("All agents", _ALL)] + [(a.name, a.name) for a in self.agents],
            value=_ALL,
            description="Agent",
        )
        self.age_filter = widgets.Dropdown(options=list(_AGES), value="any age", description="Waiting")
        for f in (self.tool_filter, self.agent_filter, self.age_filter):
            f.layout.width = "16em"
            f.observe(lambda _change: self._draw(), names="value")
        self.select_all = widgets.Checkbox(value=False, description="Select all shown", indent=False)
        self.select_all.observe(self._select_all, names="value")
        self.buttons = {
            "approve": button("Approve selected", "success"),
            "deny": button("Deny selected", "danger"),
            "cancel": button("Cancel selected"),
        }
        for verb, made in self.buttons.items():
            made.on_click(lambda _b, verb=verb: self._soon(self.send(verb)))
        self.reason = widgets.Text(placeholder=REASON_HINT)
        self.status = widgets.HTML()
        self.list_box = widgets.VBox()
        filters = (
            [self.tool_filter] + ([self.agent_filter] if len(self.agents) > 1 else []) + [self.age_filter]
        )
        self.children = [
            widgets.HBox([self.header, self.refresh_button], layout=widgets.Layout(align_items="center")),
            widgets.HBox(filters, layout=widgets.Layout(flex_flow="row wrap")),
            self.select_all,
            self.list_box,
            widgets.HBox(
                [*self.buttons.values(), self.reason],
                layout=widgets.Layout(flex_flow="row wrap", align_items="center"),
            ),
            self.status,
        ]
        self._soon(self.refresh())

    # -- reading ---------------------------------------------------------------------------------
    def _soon(self, coro: Any) -> None:
        if self.task is None or self.task.done():
            self.task = spawn(coro)
        else:
            coro.close()  # a read or a batch is under way: this click is ignored

    async def _listing(self, agent: BaseAgent) -> list[InboxItem]:
        # the notebook's principal is a local agent's caller; a remote agent's is its API key
        context = self.context if isinstance(agent, Agent) else None
        turns = await agent.pending(context=context, **self._filters)  # type: ignore[arg-type]
        return list(turns.items())

    async def refresh(self) -> None:
        """Read what waits from every agent again and redraw (selections and choices are kept)."""
        kept = {row.item.key: row for row in self.rows}
        items: list[InboxItem] = []
        errors = []
        for agent in self.agents:
            try:
                items += await self._listing(agent)
            except NbAgentsError as exc:
                errors.append(f"{agent.name}: {exc.message}")
        rows = []
        for item in items:
            old = kept.get(item.key)
            row = InboxRow(item)
            if old is not None:
                row.selected.value, row.choice.value = old.selected.value, old.choice.value
            rows.append(row)
        self.rows = rows
        tools = sorted({r.item.tool for r in rows})
        current = self.tool_filter.value
        self.tool_filter.options = [("All tools", _ALL)] + [(t, t) for t in tools]
        self.tool_filter.value = current if current in tools else _ALL
        if errors:
            self.status.value = (
                f'<span style="color:var(--jp-error-color1,#c62828)">{esc("; ".join(errors))}</span>'
            )
        self._draw()

    # -- drawing ---------------------------------------------------------------------------------
    def shown(self) -> list[InboxRow]:
        """The rows the filters let through."""
        tool, agent = self.tool_filter.value, self.agent_filter.value
        floor = _AGES.get(self.age_filter.value)
        out = []
        for row in self.rows:
            it = row.item
            age = it.age.total_seconds() if it.age is not None else None
            if tool != _ALL and it.tool != tool:
                continue
            if agent != _ALL and it.agent_name != agent:
                continue
            if floor is not None and (age is None or age < floor):
                continue
            out.append(row)
        return out

    def headline(self) -> str:
        n, shown = len(self.rows), len(self.shown())
        head = f"{n} interrupt{'s' if n != 1 else ''} waiting for an answer"
        return head + (f" · {shown} shown" if shown != n else "")

    def _draw(self) -> None:
        self.header.value = f"<b>{esc(self.headline())}</b>"
        self.list_box.children = self.shown()

    def _select_all(self, change: dict[str, Any]) -> None:
        for row in self.shown():
            row.selected.value = bool(change["new"])

    def tick(self) -> None:
        """Update every row's age and deadline (the ticker calls this while the inbox is shown)."""
        for row in self.rows:
            row.tick()

    async def _ticking(self) -> None:
        while self.tick_seconds:
            await asyncio.sleep(self.tick_seconds)
            self.tick()

    def _ipython_display_(self) -> None:
        super()._ipython_display_()
        if self.tick_seconds and (self._ticker is None or self._ticker.done()):
            self._ticker = spawn(self._ticking())

    def close(self) -> None:
        """Stop ticking and close the widget."""
        if self._ticker is not None:
            self._ticker.cancel()
        super().close()

    # -- answering -------------------------------------------------------------------------------
    def selected(self) -> list[InboxRow]:
        """The rows shown and selected: what a batch answers."""
        return [row for row in self.shown() if row.selected.value]

    async def send(self, verb: Verb) -> list[Outcome]:
        """Answer the selected rows with `verb` (a row's own choice wins); one resume per turn.

        Returns what each turn's answer came to (also in `outcomes`). Rows whose
        interrupt the verb does not fit are left waiting and named in the status.
        """
        if self._sending:
            return []  # a batch is going out: a second click sends nothing
        chosen = self.selected()
        if not chosen:
            self.status.value = f'<span style="{MUTED}">Select the rows to answer first.</span>'
            return []
        self._sending = True
        self._lock(True)
        reason = self.reason.value.strip() or None
        try:
            by_agent: dict[int, list[tuple[InboxItem, Any, Any]]] = {}
            skipped: list[str] = []
            for row in chosen:
                item, v = row.item, row.override or verb
                try:
                    by_agent.setdefault(id(item.turn.agent), []).append(
                        (item, *quick_answer(item, v, reason=reason))
                    )
                except NbAgentsError:
                    skipped.append(item.summary.title)
            outcomes: list[Outcome] = []
            for answers in by_agent.values():
                agent = answers[0][0].turn.agent
                context = self.context if isinstance(agent, Agent) else None
                outcomes += await answer_items(answers, context=context, answered_by=self.answered_by)
            self.outcomes = outcomes
            sent = [(row.item, row.override or verb) for row in chosen]
            self.status.value = await report_html(sent, outcomes, skipped, you=self.answered_by)
            await self.refresh()  # answered rows leave; turns paused since join
            return outcomes
        finally:
            self._sending = False
            self._lock(False)

    def _lock(self, locked: bool) -> None:
        for made in (*self.buttons.values(), self.refresh_button):
            made.disabled = locked

    # -- the record ------------------------------------------------------------------------------
    def _static_bundle(self) -> dict[str, Any]:
        head = self.headline()
        lines = [head]
        cells = []
        for row in self.shown():
            it = row.item
            who = f" (asked by {it.requested_by})" if it.requested_by else ""
            lines.append(f"- {it.summary.title} · {it.agent_name}{who}")
            cells.append(f'<div style="padding:4px 0">{row_html(it)}</div>')
        html = f'<div class="nba-inbox" style="{BOX}"><b>{esc(head)}</b>{"".join(cells)}</div>'
        return {"text/plain": "\n".join(lines), "text/html": html}

    def __repr__(self) -> str:
        return f"Inbox(agents={[a.name for a in self.agents]!r}, rows={len(self.rows)})"
