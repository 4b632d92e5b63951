"""Interrupts as data: the pause signal, the answer builders and typed claims.

A tool pauses its turn by raising `Interrupt`. The paused turn *returns*: its
model message carries the tool request with ``metadata.interrupt`` set to the
pause data. Answers are parts built here:

* ``respond``: a ``toolResponse`` part that supplies the tool's output (the
  tool does not run);
* ``restart``: a ``toolRequest`` part that runs the tool again, with
  ``metadata.resumed`` (what the tool sees as its reply) and, when the input
  was replaced, ``metadata.replacedInput`` holding the original input;
* ``cancel``: the person abandoned the request. A ``toolResponse`` part whose
  output is ``{"cancelled": "<why>"}`` and whose metadata says
  ``"cancelled": true`` (`cancel_part`): the tool does not run, the model reads
  that the call was cancelled (not denied), and the audit records kind
  ``"cancel"``. AG-UI calls this outcome "cancelled", MCP's elicitation "cancel".

The views of a paused call live here too, beside the builders they call:
`AgentInterrupt` (the chat API's untyped view, Genkit's ``AgentInterrupt``),
`ApprovalHold` (a call held by `ToolApproval`) and `InterruptCall`, the typed
claim Go calls ``tool.Interrupted(part)``.
"""

from .._json import to_json_value
from .answers import CANCELLED, approval, cancel_part, interrupt_as, is_cancel, respond_part, restart_part
from .signal import (
    APPROVAL_PREFIX,
    CONTROL_KEYS,
    Interrupt,
    held_for_approval,
    interrupt_digest,
    untrusted_call,
)
from .views import AgentInterrupt, ApprovalHold, InterruptCall

__all__ = [
    "APPROVAL_PREFIX",
    "CANCELLED",
    "CONTROL_KEYS",
    "AgentInterrupt",
    "ApprovalHold",
    "Interrupt",
    "InterruptCall",
    "approval",
    "cancel_part",
    "held_for_approval",
    "interrupt_as",
    "interrupt_digest",
    "is_cancel",
    "respond_part",
    "restart_part",
    "to_json_value",
    "untrusted_call",
]
