"""After each cell runs: live forms whose question was settled meanwhile stop asking.

A form answered by code in a later cell (``await chat.resume(...)``, as after
Run All), in another tab or process, or whose deadline passed, would keep its
buttons live until someone clicked one and was told. So every `TurnView` still
waiting is watched, and after each cell the kernel runs (IPython's
``post_run_cell`` event) each one re-reads the agent's audit: a view whose
calls were answered elsewhere collapses to "Already answered (...)", one whose
deadline passed turns into the record of its default (`expiring`). Nothing is
polled between cells, and a view that settled is forgotten.
"""

from __future__ import annotations

import asyncio
import sys
import weakref
from typing import TYPE_CHECKING, Any

from .._sync import start as spawn
from .expiring import expire_now

if TYPE_CHECKING:
    from .view import TurnView

__all__ = ["after_cell", "recheck", "watch", "watched"]

_views: weakref.WeakSet[Any] = weakref.WeakSet()
_shells: weakref.WeakSet[Any] = weakref.WeakSet()


def watch(view: TurnView) -> None:
    """Re-check `view` after each cell until it settles (nothing happens outside IPython)."""
    _views.add(view)
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    events = getattr(shell, "events", None)
    if events is not None and shell not in _shells:
        events.register("post_run_cell", after_cell)
        _shells.add(shell)


def watched() -> list[TurnView]:
    """The views still watched."""
    return list(_views)


def recheck(view: TurnView) -> asyncio.Task[bool] | None:
    """Re-read what became of `view`'s question: its deadline's default, an answer given elsewhere.

    None while the view is not waiting or is sending its own answer.
    """
    if view.state != "waiting" or (view.task is not None and not view.task.done()):
        return None
    if view.checking is None or view.checking.done():
        view.checking = spawn(_recheck(view))
    return view.checking


async def _recheck(view: TurnView) -> bool:
    return await expire_now(view) or await view._answered_elsewhere(expect="waiting")


def after_cell(*_args: Any) -> None:
    """What runs after each cell: every waiting view re-reads what became of its question."""
    for view in list(_views):
        if view.settled:
            _views.discard(view)
        else:
            view.recheck()
