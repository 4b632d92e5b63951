"""Notebook widgets: interrupts as forms that resume the turn inline.

`TurnView` is what a response shows in a cell: a form per interrupt and the
continuation streamed below; `ChatWidget` is a chat box with inline forms;
`pending` redraws every waiting form after a kernel restart. Importing this
package imports ipywidgets; ``import nb_agents`` alone never does.

Example:
    >>> from nb_agents.notebook import ChatWidget, TurnView, pending   # doctest: +SKIP
    >>> pending(agent)        # every paused turn in the store, as forms  # doctest: +SKIP
"""

from .chat_widget import ChatWidget
from .fields import Field, FieldError, schema_field
from .forms import Answer, InterruptForm, is_approval_shaped
from .pending import PendingView, apending, pending
from .view import TurnView

__all__ = [
    "Answer",
    "ChatWidget",
    "Field",
    "FieldError",
    "InterruptForm",
    "PendingView",
    "TurnView",
    "apending",
    "is_approval_shaped",
    "pending",
    "schema_field",
]
