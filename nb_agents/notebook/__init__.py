"""Notebook widgets: interrupts as forms that resume the turn inline.

`TurnView` is what a response shows in a cell: a form per interrupt and the
continuation streamed below; `ChatWidget` is a chat box with inline forms;
`pending` redraws every waiting form after a kernel restart; `Inbox` lists every
interrupt waiting across sessions and agents, to answer in batches; `compare` shows
two continuations of one pause (a chat and its fork) side by side; `Timeline`
shows a turn or a session as a timeline (what ran, the waits for a person). Importing this
package imports ipywidgets; ``import nb_agents`` alone never does.

This package is nb_agents' display plugin (entry point group
``nb_agents.display``): in a live kernel, the first response displayed loads
it, and `register_display` makes every response with a chat show as its
`TurnView`, so a paused turn is answered right in its cell.

Example:
    >>> from nb_agents.notebook import ChatWidget, TurnView, pending   # doctest: +SKIP
    >>> pending(agent)        # every paused turn in the store, as forms  # doctest: +SKIP
"""

from .._display import register
from ..responses import AgentResponse
from .chat_widget import ChatWidget
from .compare import Comparison, compare
from .fields import Field, FieldError, schema_field
from .forms import Answer, InterruptForm, is_approval_shaped
from .inbox import Inbox
from .pending import PendingView, apending, pending
from .timeline import Timeline
from .view import TurnView

__all__ = [
    "Answer",
    "ChatWidget",
    "Comparison",
    "Field",
    "FieldError",
    "Inbox",
    "InterruptForm",
    "PendingView",
    "Timeline",
    "TurnView",
    "apending",
    "compare",
    "is_approval_shaped",
    "pending",
    "register_display",
    "schema_field",
]


def _live_response(res: AgentResponse) -> TurnView | None:
    if res.chat is None or not res.interrupts:
        return None  # nothing to answer: its static rendering says it all
    return TurnView(res, res.chat)


def register_display() -> None:
    """Show responses as their `TurnView` in a live kernel (the ``nb_agents.display`` plugin)."""
    register(AgentResponse, live=_live_response)


register_display()
