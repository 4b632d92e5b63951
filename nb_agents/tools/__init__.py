"""Tools: functions the model may call, with schemas from their type hints.

Three kinds, one `Tool` class (`nb_agents.tools.base`), made by `tool`,
`define_interrupt` and `resumable_tool` (`nb_agents.tools.define`):

* `tool`: a plain function (sync functions run in a worker thread);
* `define_interrupt`: a tool that always pauses and never executes (the
  human's answer *is* its output);
* `resumable_tool`: a function ``fn(input, reply)`` that raises `Interrupt`
  while ``reply`` is None and finishes once restarted with a reply.

Any tool may take ``ctx: ToolContext``. ``raise ToolFail("msg")`` hands the
error to the model and the turn goes on; any other exception fails the turn.
"""

from .base import Tool, ToolContext, ToolFail
from .define import define_interrupt, resumable_tool, tool

__all__ = ["Tool", "ToolContext", "ToolFail", "define_interrupt", "resumable_tool", "tool"]
