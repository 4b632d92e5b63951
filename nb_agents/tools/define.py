"""The three ways to make a tool: `tool`, `define_interrupt`, `resumable_tool`.

* `tool`: a plain function (sync functions run in a worker thread);
* `define_interrupt`: a tool that always pauses and never executes (the
  human's answer *is* its output);
* `resumable_tool`: a function ``fn(input, reply)`` that raises `Interrupt`
  while ``reply`` is None and finishes once restarted with a reply.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any, TypeVar, overload

from pydantic import BaseModel, create_model

from ..expiry import Expiry, check_expires_in
from ..schemas import caller_locals, camel, is_model, signature_model, type_hints
from .base import Tool, ToolContext

__all__ = ["define_interrupt", "resumable_tool", "tool"]

F = TypeVar("F", bound=Callable[..., Any])


def _description(fn: Callable[..., Any], given: str | None) -> str:
    return given if given is not None else inspect.cleandoc(fn.__doc__ or "")


@overload
def tool(fn: F, /) -> Tool: ...
@overload
def tool(*, name: str | None = None, description: str | None = None) -> Callable[[F], Tool]: ...
def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
) -> Tool | Callable[[F], Tool]:
    """Turn a function into a `Tool`; its schema comes from the type hints.

    Use bare (``@tool``) or with options (``@tool(name="getBalance")``). The
    description defaults to the docstring. A function with one pydantic-model
    parameter takes that model as its input; otherwise the parameters become
    the fields of the input object.

    Example:
        >>> @tool(name="getBalance")
        ... async def get_balance(account: str) -> float:
        ...     '''The balance of an account.'''
        ...     return 100.0
        >>> get_balance.name
        'getBalance'
    """

    localns = caller_locals()

    def build(f: Callable[..., Any]) -> Tool:
        return _tool(f, name or f.__name__, description, localns)

    return build(fn) if fn is not None else build


def _tool(
    f: Callable[..., Any],
    name: str,
    description: str | None,
    localns: dict[str, Any],
    *,
    reply_param: str | None = None,
    **extra: Any,
) -> Tool:
    """`f` as a `Tool`: its input model from its signature (less `reply_param`), its output type."""
    skip = {reply_param} if reply_param is not None else set()
    model, unpack, ctx_param, hints = signature_model(f, name, skip, localns, ToolContext)
    return Tool(
        f,
        name=name,
        description=_description(f, description),
        input_model=model,
        unpack_input=unpack,
        output_type=hints.get("return", Any),
        ctx_param=ctx_param,
        reply_param=reply_param,
        **extra,
    )


def define_interrupt(
    *,
    name: str,
    description: str = "",
    input_schema: type[BaseModel] | None = None,
    output_schema: Any = None,
    request_metadata: Callable[[Any], Any] | dict[str, Any] | None = None,
    expires_in: timedelta | float | None = None,
    on_expiry: Expiry | str | None = None,
) -> Tool:
    """A tool that always pauses the turn and never executes (JS ``defineInterrupt``).

    Args:
        name: The tool name the model calls.
        description: What the model is told the tool is for.
        input_schema: A pydantic model for what the model passes (shown to the human).
        output_schema: The type of the human's answer; a respond is validated against it.
        request_metadata: Pause data, or a function of the raw input returning it.
        expires_in: How long a pause waits for an answer (a `timedelta` or seconds,
            positive and finite); None waits forever. The paused part carries the
            deadline as ``metadata.expiresAt``.
        on_expiry: What answers a pause nobody answered in time: an `Expiry`
            (``Expiry.respond(output)``, ``Expiry.deny(message)``) or a denial
            message; a denial naming the deadline when not given.

    Example:
        >>> class Ask(BaseModel):
        ...     question: str
        >>> ask = define_interrupt(name="askUser", input_schema=Ask, output_schema=str)
        >>> ask.kind
        'interrupt'
        >>> from datetime import timedelta
        >>> confirm = define_interrupt(name="confirm", output_schema=bool,
        ...                            expires_in=timedelta(hours=1), on_expiry=Expiry.respond(False))
    """
    model = input_schema or create_model(f"{camel(name)}Input")
    return Tool(
        None,
        name=name,
        description=description,
        input_model=model,
        unpack_input=False,
        output_type=output_schema if output_schema is not None else Any,
        kind="interrupt",
        request_metadata=request_metadata,
        expires_in=expires_in,
        on_expiry=on_expiry,
    )


def resumable_tool(
    *,
    name: str | None = None,
    description: str | None = None,
    resume: Any,
    expires_in: timedelta | float | None = None,
    on_expiry: Expiry | str | None = None,
) -> Callable[[Callable[..., Awaitable[Any] | Any]], Tool]:
    """A tool that pauses for a typed reply (Go ``DefineResumableTool[In, Out, Res]``).

    The function takes ``(input, reply)``: ``reply`` is None on the first call
    and an instance of `resume` once the caller restarts it with a reply.
    With ``expires_in`` (and ``on_expiry``, as for `define_interrupt`), each pause
    it raises waits that long; an `Interrupt` raised with its own ``expires_in``
    or ``on_expiry`` overrides them for that pause.

    Example:
        >>> class Reply(BaseModel):
        ...     approved: bool
        >>> @resumable_tool(name="deleteFile", resume=Reply)
        ... async def delete_file(path: str, reply: Reply | None) -> str:
        ...     if reply is None:
        ...         raise Interrupt({"question": f"Delete {path}?"})
        ...     return "deleted" if reply.approved else "kept"
        >>> delete_file.kind
        'resumable'
    """
    if not (is_model(resume) or resume is dict or getattr(resume, "__origin__", None) is dict):
        raise TypeError(f"resumable_tool resume type must be a pydantic model or a dict, got {resume!r}")
    check_expires_in(expires_in)  # refused at the decorator, before any function is given

    localns = caller_locals()

    def build(f: Callable[..., Any]) -> Tool:
        tool_name = name or f.__name__
        found = type_hints(f, localns)
        params = [
            p for p in inspect.signature(f).parameters if p != "ctx" and found.get(p) is not ToolContext
        ]
        if len(params) < 2:
            raise TypeError(f"resumable tool '{tool_name}' must take (input, reply); got parameters {params}")
        return _tool(
            f,
            tool_name,
            description,
            localns,
            reply_param=params[-1],
            resume_type=resume,
            kind="resumable",
            expires_in=expires_in,
            on_expiry=on_expiry,
        )

    return build
