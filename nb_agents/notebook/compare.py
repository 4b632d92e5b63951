"""`compare`: two continuations of one paused turn side by side, in a cell.

Give it two results (responses) or two chats, typically a chat and its fork
(`nb_agents.Chat.fork`) each answered its own way. What it returns displays
as escaped HTML: the pause both went on from, then a column per branch (the
answers given, the tools that ran and their results, the replies), and a word
diff of the final texts. The rendering itself is `nb_agents.render.compare`
(no widgets: a saved notebook shows it without a kernel).
"""

from __future__ import annotations

from .._engine import FORK_MARK
from ..chat import Chat
from ..render.compare import Branch, Comparison
from ..responses import AgentResponse

__all__ = ["Comparison", "compare"]

Continuation = AgentResponse | Chat


def _branch(value: Continuation, label: str) -> Branch:
    if isinstance(value, AgentResponse):
        messages = list(value.messages)
        if not messages and value.message is not None:
            messages = [value.message]
        return Branch(label, messages, value.session_id, value.snapshot_id)
    if isinstance(value, Chat):
        return Branch(label, list(value.messages), value.session_id, value.snapshot_id)
    raise TypeError(f"compare() takes responses or chats, got {type(value).__name__}")


def _labels(a: Continuation, b: Continuation) -> tuple[str, str]:
    sa, sb = a.session_id or "", b.session_id or ""
    if FORK_MARK in sb and FORK_MARK not in sa:
        return "Original", "Fork"
    if FORK_MARK in sa and FORK_MARK not in sb:
        return "Fork", "Original"
    return "A", "B"


def compare(a: Continuation, b: Continuation, *, labels: tuple[str, str] | None = None) -> Comparison:
    """Two continuations side by side: answers, tool calls and results, replies, a diff of the final text.

    Args:
        a: A response (what ``chat.resume`` returned) or a chat.
        b: The other one, e.g. of the fork answered differently.
        labels: The columns' titles (default: "Original" and "Fork" when one
            is a fork's, else "A" and "B").

    Example:
        >>> fork = await chat.fork()                                       # doctest: +SKIP
        >>> yes = await chat.resume(restart=[res.interrupts[0].approve()])  # doctest: +SKIP
        >>> no = await fork.resume(respond=[res.interrupts[0].respond({"approved": False})])  # doctest: +SKIP
        >>> compare(yes, no)                                                # doctest: +SKIP
    """
    branch_a, branch_b = _branch(a, "A"), _branch(b, "B")
    branch_a.label, branch_b.label = labels if labels is not None else _labels(a, b)
    return Comparison(branch_a, branch_b)
