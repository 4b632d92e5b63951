"""The engine's observation seam: a turn, a model call and a tool call, as they run.

Three places in the engine go through here, and nowhere else is watched:

* `turn`: one turn of an invocation (`Invocation._turn`), from its start to its output;
* `model_call`: one model call of a prompt turn (`PromptTurn._call_model`);
* `tool_call`: one run of a tool, after the decision step let it run (`ToolRunner._one`).

Each records a small timing step on the turn (`TurnContext.steps`: what ran,
when, for how long, its outcome; `timing` is what the turn's row keeps of them,
a few dozen bytes, for `nb_agents.notebook.Timeline`), and hands the call to the
installed `Observer`, if any. None is installed unless
`nb_agents.tracing.instrument` installs one; then each call is one global read
more than a plain call.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from ..interrupts import Interrupt
from ..tools import ToolFail

if TYPE_CHECKING:
    from ..session import TurnContext
    from ..tools import ToolContext
    from ..types import AgentInput, AgentOutput, GenerateRequest, GenerateResponse
    from .invocation import Invocation

__all__ = ["Observer", "install", "model_call", "timing", "tool_call", "turn"]

TurnRun = Callable[["AgentInput", int], Awaitable["AgentOutput"]]
ModelRun = Callable[["GenerateRequest"], Awaitable["GenerateResponse"]]
ToolRun = Callable[[Any, "ToolContext"], Awaitable[Any]]


class Observer(Protocol):
    """What watches the engine (`nb_agents.tracing` implements it): each method runs the call it is given."""

    def turn(self, inv: Invocation, inp: AgentInput, index: int, run: TurnRun) -> Awaitable[AgentOutput]: ...

    def model_call(
        self, ctx: TurnContext, model: str, request: GenerateRequest, run: ModelRun
    ) -> Awaitable[GenerateResponse]: ...

    def tool_call(self, ctx: TurnContext, tctx: ToolContext, inp: Any, run: ToolRun) -> Awaitable[Any]: ...


_observer: Observer | None = None


def install(observer: Observer | None) -> Observer | None:
    """Install `observer` (None: remove it); returns the one it replaces."""
    global _observer
    previous, _observer = _observer, observer
    return previous


def turn(inv: Invocation, inp: AgentInput, index: int, run: TurnRun) -> Awaitable[AgentOutput]:
    """Run one turn of `inv`, watched if an observer is installed."""
    obs = _observer
    return run(inp, index) if obs is None else obs.turn(inv, inp, index, run)


_USUAL = {"m": "stop", "t": "done"}


def _step(ctx: TurnContext, kind: str, name: str, ref: str | None, t0: float, outcome: str | None) -> None:
    """One step, kept small: ``[kind, name, at ms, ms, ref, outcome]``: kind ``m`` (a model call)
    or ``t`` (a tool run); the outcome only when it is not the usual one (``stop``, ``done``),
    and trailing Nones left off."""
    step: list[Any] = [kind, name, round((t0 - ctx.clock) * 1000), round((time.monotonic() - t0) * 1000)]
    unusual = outcome if outcome and outcome != _USUAL[kind] else None
    if unusual is not None:
        step += [ref, unusual]
    elif ref is not None:
        step.append(ref)
    ctx.steps.append(step)


async def model_call(
    ctx: TurnContext, model: str, request: GenerateRequest, run: ModelRun
) -> GenerateResponse:
    """Call the model once (`run`), recording the call as a step of the turn."""
    obs = _observer
    t0 = time.monotonic()
    try:
        response = await (run(request) if obs is None else obs.model_call(ctx, model, request, run))
    except BaseException:
        _step(ctx, "m", model, None, t0, "failed")
        raise
    _step(ctx, "m", model, None, t0, response.finish_reason)
    return response


async def tool_call(ctx: TurnContext, tctx: ToolContext, inp: Any, run: ToolRun) -> Any:
    """Run a tool once (`run`), recording the run as a step of the turn (its outcome, as `ToolRunner`)."""
    obs = _observer
    t0 = time.monotonic()
    outcome = "failed"
    try:
        output = await (run(inp, tctx) if obs is None else obs.tool_call(ctx, tctx, inp, run))
        outcome = "done"
        return output
    except BaseException as exc:
        outcome = (
            "paused" if isinstance(exc, Interrupt) else "refused" if isinstance(exc, ToolFail) else "failed"
        )
        raise
    finally:
        _step(ctx, "t", tctx.name, tctx.ref, t0, outcome)


def timing(ctx: TurnContext | None) -> dict[str, Any] | None:
    """What a turn's row keeps of its timing: how long it ran (ms; it ended when its row was
    written) and its steps (see `_step`); a few dozen bytes. None without a turn."""
    if ctx is None:
        return None
    return {"ms": round((time.monotonic() - ctx.clock) * 1000), "steps": list(ctx.steps)}
