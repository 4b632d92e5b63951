"""`Tool`, the one class of every tool, and what a call of one sees (`ToolContext`, `ToolFail`).

A `Tool` holds a function (or none, for an interrupt), its schemas from type
hints, and how a call decodes its input and checks an answer's output or
reply. `nb_agents.tools.define` builds them; the engine calls `Tool.invoke`.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Mapping
from datetime import timedelta
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from .._json import to_json_value
from ..expiry import Expiry, check_expires_in, checked_default
from ..interrupts import Interrupt, InterruptCall
from ..types import Part, ToolDefinition

__all__ = ["Tool", "ToolContext", "ToolFail"]


class ToolFail(Exception):  # noqa: N818 - a control-flow signal, not an error
    """Raised by a tool to report an error the model should see and may fix.

    The tool call gets ``{"error": message}`` as its output and the turn goes
    on. Any other exception fails the whole turn.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ToolContext:
    """What a running tool can see of its call.

    Attributes:
        name: The tool's name.
        ref: The call's ref (from the model), if any.
        resumed: ``metadata.resumed`` of a restart (the reply), else None.
        original_input: The input before ``restart_with_input`` replaced it.
        metadata: The request part's metadata.
        session: The turn's `Session` (messages, custom state, artifacts).
        context: The request context (``{"auth": {"uid": ...}}``), {} when none was given.
        idempotency_key: Stable for this call of this answer: the same when the
            call runs again after a takeover or an explicit retry. Pass it to a
            downstream API that deduplicates (a payment's idempotency key).
        tool: The `Tool` being called (None when the agent has no such tool), so
            middleware can read its approval metadata.
        answered_by_rule: Set by the engine when an approval rule answered the
            call (``{"rule": id, "action": "allow" | "deny"}``): the history and
            the audit say so.
    """

    def __init__(
        self,
        *,
        name: str,
        ref: str | None = None,
        resumed: Any = None,
        original_input: Any = None,
        metadata: dict[str, Any] | None = None,
        session: Any = None,
        context: dict[str, Any] | None = None,
        idempotency_key: str = "",
        tool: Tool | None = None,
        send_chunk: Callable[[Any], Awaitable[None]] | None = None,
    ) -> None:
        self.name = name
        self.idempotency_key = idempotency_key
        self.ref = ref
        self.resumed = resumed
        self.original_input = original_input
        self.metadata = metadata or {}
        self.session = session
        self.context: dict[str, Any] = context if context is not None else {}
        self.tool = tool
        self.answered_by_rule: dict[str, Any] | None = None
        self._send_chunk = send_chunk

    async def send_chunk(self, chunk: Any) -> None:
        """Stream a chunk to the caller while the tool runs (dropped when nobody listens).

        Takes what `TurnContext.send_chunk` takes: an ``AgentStreamChunk``, a
        ``ModelResponseChunk`` or the dict of one.
        """
        if self._send_chunk is not None:
            await self._send_chunk(chunk)

    def interrupt(
        self,
        data: BaseModel | dict[str, Any] | None = None,
        *,
        expires_in: timedelta | float | None = None,
        on_expiry: Expiry | str | None = None,
    ) -> None:
        """Pause the turn with `data` (raises `Interrupt`; see it for the deadline arguments)."""
        raise Interrupt(data, expires_in=expires_in, on_expiry=on_expiry)


class Tool:
    """A tool the model can call. Build one with `tool`, `define_interrupt` or
    `resumable_tool` rather than directly.

    Attributes:
        needs_approval: Whether a call needs a person's decision: True (held
            for a person even when the agent has no `ToolApproval`), False (never
            held), or None (the agent's `ToolApproval`, if any, decides; the default).
        annotations: Hints about the tool's behaviour (MCP's ``readOnlyHint``,
            ``destructiveHint``, ...), or None.
        approval_info: Extra pause data a `ToolApproval` hold of this tool
            carries (what the approval form shows), or None.
        expires_in: How long this tool's own pauses wait for an answer, or None (forever).
        on_expiry: What answers them past the deadline (an `Expiry`; a denial by default).
    """

    needs_approval: bool | None = None
    expires_in: timedelta | None = None
    on_expiry: Expiry | None = None
    annotations: dict[str, Any] | None = None
    approval_info: dict[str, Any] | None = None

    def __init__(
        self,
        fn: Callable[..., Any] | None,
        *,
        name: str,
        description: str = "",
        input_model: type[BaseModel],
        unpack_input: bool,
        output_type: Any = Any,
        resume_type: Any = None,
        kind: str = "tool",
        ctx_param: str | None = None,
        reply_param: str | None = None,
        request_metadata: Callable[[Any], Any] | dict[str, Any] | None = None,
        expires_in: timedelta | float | None = None,
        on_expiry: Expiry | str | None = None,
    ) -> None:
        self.fn = fn
        self.name = name
        self.description = description
        self.kind = kind
        self.input_model = input_model
        self._unpack_input = unpack_input
        self.output_type = output_type
        self._output_adapter: TypeAdapter[Any] | None = (
            TypeAdapter(output_type) if output_type is not Any else None
        )
        self.resume_type = resume_type
        self._resume_adapter: TypeAdapter[Any] | None = (
            TypeAdapter(resume_type) if resume_type is not None else None
        )
        self._ctx_param = ctx_param
        self._reply_param = reply_param
        self._request_metadata = request_metadata
        self._definition: ToolDefinition | None = None
        self.expires_in = check_expires_in(expires_in)
        self.on_expiry = self._checked_expiry(on_expiry) if on_expiry is not None else None
        if fn is not None:
            functools.update_wrapper(self, fn)  # type: ignore[arg-type]

    # -- schemas -------------------------------------------------------------
    @property
    def input_schema(self) -> dict[str, Any]:
        return self.input_model.model_json_schema()

    @property
    def output_schema(self) -> dict[str, Any] | None:
        return self._output_adapter.json_schema() if self._output_adapter else None

    def definition(self) -> ToolDefinition:
        """The tool as the model sees it (name, description, JSON schemas)."""
        if self._definition is None:
            meta = {"interrupt": True} if self.kind == "interrupt" else None
            self._definition = ToolDefinition(
                name=self.name,
                description=self.description,
                input_schema=self.input_schema,
                output_schema=self.output_schema,
                metadata=meta,
            )
        return self._definition

    @property
    def subagent_tools(self) -> Mapping[str, Tool] | None:
        """The tools of the agent this tool runs (a sub-agent tool's); None for every other tool."""
        return None

    def approval_needed(self, resumed: Any = None) -> bool | None:
        """Whether a call needs a person's decision: True (held even without `ToolApproval`),
        False (never held), None (the agent's `ToolApproval`, if any, decides).

        `resumed` is the answer the call is restarted with, if any. `needs_approval`
        unless a kind of tool knows better.
        """
        return self.needs_approval

    def _checked_expiry(self, on_expiry: Expiry | str) -> Expiry:
        """`on_expiry` for this tool's own pauses, refused now if it could never apply."""
        return checked_default(on_expiry, tool=self.name, check_output=self.check_output)

    def _with_deadline(self, sig: Interrupt) -> Interrupt:
        """`sig` with this tool's deadline where the pause gave none (its own checked here)."""
        if sig.on_expiry is not None:
            self._checked_expiry(sig.on_expiry)
        if sig.expires_in is None:
            sig.expires_in = self.expires_in
        if sig.on_expiry is None:
            sig.on_expiry = self.on_expiry
        return sig

    # -- validation ----------------------------------------------------------
    def parse_input(self, raw: Any) -> BaseModel:
        """Validate raw JSON input; raises pydantic's ValidationError."""
        return self.input_model.model_validate(raw if raw is not None else {})

    def decoded_input(self, raw: Any) -> Any:
        """The input as the function receives it: the model, or its fields."""
        return self.parse_input(raw)

    def check_output(self, raw: Any) -> None:
        """Validate an output given in a respond; raises ValidationError."""
        if self._output_adapter is not None:
            self._output_adapter.validate_python(raw)

    def check_resume(self, raw: Any, pause: dict[str, Any] | None = None) -> None:
        """Validate a restart's ``resumed`` value against the resume type.

        `pause` is the pause data of the call it answers (``metadata.interrupt``), when known.
        """
        if self._resume_adapter is not None and raw is not None and raw is not True:
            self._resume_adapter.validate_python(raw)

    # -- running -------------------------------------------------------------
    async def invoke(self, raw_input: Any, ctx: ToolContext) -> Any:
        """Run the tool on raw JSON input; returns the JSON output.

        Raises `Interrupt`, `ToolFail` (also for input that fails the schema)
        or whatever the function raises.
        """
        if self.kind == "interrupt":
            raise self._with_deadline(Interrupt(self._pause_data(raw_input)))
        try:
            parsed = self.parse_input(raw_input)
        except ValidationError as exc:
            raise ToolFail(f"Invalid input for tool '{self.name}': {exc}") from exc
        kwargs: dict[str, Any] = {}
        args: list[Any] = []
        if self._unpack_input:
            kwargs.update({k: getattr(parsed, k) for k in type(parsed).model_fields})
        else:
            args.append(parsed)
        if self._reply_param is not None:  # the reply, decoded to the resume type (None: not restarted)
            resumed = ctx.resumed
            if resumed is not None and resumed is not True and self._resume_adapter is not None:
                resumed = self._resume_adapter.validate_python(resumed)
            kwargs[self._reply_param] = None if resumed is True else resumed
        if self._ctx_param is not None:
            kwargs[self._ctx_param] = ctx
        assert self.fn is not None
        try:
            if inspect.iscoroutinefunction(self.fn):
                result = await self.fn(*args, **kwargs)
            else:
                import anyio.to_thread  # loaded with the first sync tool, not with nb_agents

                result = await anyio.to_thread.run_sync(functools.partial(self.fn, *args, **kwargs))
                if inspect.isawaitable(result):
                    result = await result
        except Interrupt as sig:
            raise self._with_deadline(sig) from None
        if self._output_adapter is not None and not isinstance(result, BaseModel):
            try:
                return self._output_adapter.dump_python(result, mode="json", by_alias=True)
            except Exception:  # noqa: BLE001 - falls back to the generic conversion
                pass
        return to_json_value(result)

    def _pause_data(self, raw_input: Any) -> Any:
        meta = self._request_metadata
        if callable(meta):
            return meta(raw_input)
        return meta

    async def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the underlying function directly (handy in tests)."""
        assert self.fn is not None
        result = self.fn(*args, **kwargs)
        return await result if inspect.isawaitable(result) else result

    # -- claims ---------------------------------------------------------------
    def interrupted(self, part: Part) -> InterruptCall[Any] | None:
        """Claim `part` if it is an interrupted call of this tool.

        Returns an `InterruptCall` whose ``input`` is decoded to the tool's
        input type, or None for any other part.
        """
        if not part.is_interrupt or part.tool_request is None or part.tool_request.name != self.name:
            return None
        try:
            decoded = self.decoded_input(part.tool_request.input)
        except ValidationError:
            return None
        return InterruptCall(self, part, decoded)

    def __repr__(self) -> str:
        return f"Tool(name={self.name!r}, kind={self.kind!r})"
