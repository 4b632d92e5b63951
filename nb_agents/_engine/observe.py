"""The engine's observation seam: a turn, a model call and a tool call, as they run.

Three places in the engine are watched, and nowhere else:

* one turn of an invocation (`Turn.__call__`), from its start to its output;
* one model call of a prompt turn (`PromptTurn._call_model`);
* one run of a tool, after the decision step let it run (`ToolRunner._one`).

Each reads `observer` once: None (the usual case: nothing is installed unless
`nb_agents.tracing.instrument` installs one) runs the call plainly, else the
observer's method of the same name runs it. A model call and a tool run also
record a small timing step on the turn (`step`, in `TurnContext.steps`: what
ran, when, for how long, its outcome; `timing` is what the turn's row keeps of
them, a few dozen bytes, for `nb_agents.notebook.Timeline`).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..session import TurnContext
    from ..tools import ToolContext
    from ..types import AgentInput, AgentOutput, GenerateRequest, GenerateResponse
    from .invocation import Invocation

__all__ = ["Observer", "install", "observer", "step", "timing"]

TurnRun = Callable[[], Awaitable["AgentOutput"]]  # the turn itself: call it to run its steps
ModelRun = Callable[["GenerateRequest"], Awaitable["GenerateResponse"]]
ToolRun = Callable[[Any, "ToolContext"], Awaitable[Any]]


class Observer(Protocol):
    """What watches the engine (`nb_agents.tracing` implements it): each method runs the call it is given."""

    def turn(self, inv: Invocation, inp: AgentInput, index: int, run: TurnRun) -> Awaitable[AgentOutput]: ...

    def model_call(
        self, ctx: TurnContext, model: str, request: GenerateRequest, run: ModelRun
    ) -> Awaitable[GenerateResponse]: ...

    def tool_call(self, ctx: TurnContext, tctx: ToolContext, inp: Any, run: ToolRun) -> Awaitable[Any]: ...


observer: Observer | None = None
"""The installed observer (`install`): the engine reads it once per turn, model call and tool run."""


def install(new: Observer | None) -> Observer | None:
    """Install `new` (None: remove it); returns the one it replaces."""
    global observer
    previous, observer = observer, new
    return previous


_USUAL = {"m": "stop", "t": "done"}


def step(ctx: TurnContext, kind: str, name: str, ref: str | None, t0: float, outcome: str | None) -> None:
    """Record one step of the turn, kept small: ``[kind, name, at ms, ms, ref, outcome]``: kind
    ``m`` (a model call) or ``t`` (a tool run); the outcome only when it is not the usual one
    (``stop``, ``done``), and trailing Nones left off."""
    entry: list[Any] = [kind, name, round((t0 - ctx.clock) * 1000), round((time.monotonic() - t0) * 1000)]
    unusual = outcome if outcome and outcome != _USUAL[kind] else None
    if unusual is not None:
        entry += [ref, unusual]
    elif ref is not None:
        entry.append(ref)
    ctx.steps.append(entry)


def timing(ctx: TurnContext | None) -> dict[str, Any] | None:
    """What a turn's row keeps of its timing: how long it ran (ms; it ended when its row was
    written) and its steps (see `step`); a few dozen bytes. None without a turn."""
    if ctx is None:
        return None
    return {"ms": round((time.monotonic() - ctx.clock) * 1000), "steps": list(ctx.steps)}
