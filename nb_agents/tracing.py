"""OpenTelemetry traces of agent turns, after the GenAI semantic conventions (extra ``otel``).

`instrument` installs an observer on the engine's seam (`nb_agents._engine.observe`)
that makes, for each turn, model call and tool run, the span the conventions
name (their "agent spans" and "inference" pages, status Development):

* ``invoke_agent {agent}`` (INTERNAL): ``gen_ai.operation.name = invoke_agent``,
  ``gen_ai.agent.name``, ``gen_ai.conversation.id`` (the session id),
  ``gen_ai.provider.name``; nb_agents' own ``nb_agents.finish_reason``,
  ``nb_agents.snapshot_id`` and ``nb_agents.parent_snapshot_id`` (which pause a
  resumed turn answered), ``error.type`` and an error status when it failed;
  a turn that pauses adds a ``hitl.pause`` event per call that waits;
* ``chat {model}`` (CLIENT), one per model call: ``gen_ai.request.model``,
  ``gen_ai.provider.name``, ``gen_ai.response.finish_reasons`` and, when the
  model reports them, ``gen_ai.usage.input_tokens`` / ``output_tokens``;
* ``execute_tool {tool}`` (INTERNAL), one per tool run the decision step let
  through: ``gen_ai.tool.name``, ``gen_ai.tool.call.id`` (the call's ref),
  ``gen_ai.tool.type = function``, ``gen_ai.tool.description``;
  ``nb_agents.tool.outcome`` (``done``, ``paused``, ``refused``, ``failed``).

Spans nest as the calls do: model and tool spans under their turn, and a
sub-agent's turn (`Agent.as_tool`) under the parent's ``execute_tool`` span.

The wait for a person is a span of its own, ``hitl.wait {tool}`` (INTERNAL),
one per answer, under the ``invoke_agent`` span of the turn the answer
resumed. It starts when the paused turn was stored and ends when the answer
came (so its duration is the wait), and says who answered and how:
``hitl.answered_by`` (the authenticated principal, else what the client
claimed), ``hitl.answer`` (``respond``, ``restart``, ``expired``),
``hitl.decision`` (``person`` or ``expiry``), ``hitl.wait.seconds``,
``gen_ai.tool.name`` and ``gen_ai.tool.call.id``. A paused turn kept only in
its client's state has no stored time: its answer is a ``hitl.answer`` event
instead. No message content is recorded.

``import nb_agents`` never imports OpenTelemetry; this module does.

Example:
    >>> from opentelemetry.sdk.trace import TracerProvider              # doctest: +SKIP
    >>> from opentelemetry.sdk.trace.export import SimpleSpanProcessor   # doctest: +SKIP
    >>> from opentelemetry.sdk.trace.export import in_memory_span_exporter as memory  # doctest: +SKIP
    >>> exporter = memory.InMemorySpanExporter(); provider = TracerProvider()  # doctest: +SKIP
    >>> provider.add_span_processor(SimpleSpanProcessor(exporter))      # doctest: +SKIP
    >>> nb_agents.tracing.instrument(tracer_provider=provider)          # doctest: +SKIP
    >>> [s.name for s in exporter.get_finished_spans()]                 # doctest: +SKIP
    ['chat gpt-4o-mini', 'invoke_agent bankingAgent']
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer, TracerProvider

from . import __version__
from ._engine import observe
from ._engine.ownership import principal_of
from .expiry import parse as parse_time
from .interrupts import Interrupt
from .tools import ToolFail

if TYPE_CHECKING:
    from ._engine.invocation import Invocation
    from ._engine.observe import ModelRun, ToolRun, TurnRun
    from .session import TurnContext
    from .tools import ToolContext
    from .types import AgentInput, AgentOutput, GenerateRequest, GenerateResponse, ToolResume

__all__ = ["Instrumentation", "instrument", "uninstrument"]

_PROVIDERS = {
    "openai": "openai",
    "googleai": "gcp.gemini",
    "vertexai": "gcp.vertex_ai",
    "anthropic": "anthropic",
    "ollama": "ollama",
}


def provider_and_model(name: str) -> tuple[str, str]:
    """(``gen_ai.provider.name``, ``gen_ai.request.model``) of a model name like ``openai/gpt-4o-mini``.

    Example:
        >>> provider_and_model("openai/gpt-4o-mini"), provider_and_model("scripted")
        (('openai', 'gpt-4o-mini'), ('nb_agents', 'scripted'))
    """
    prefix, sep, rest = name.partition("/")
    if not sep:
        return "nb_agents", name
    return _PROVIDERS.get(prefix, prefix), rest


def _iso_ns(iso: str | None) -> int | None:
    when = parse_time(iso)
    return None if when is None else int(when.timestamp() * 1e9)


class Instrumentation:
    """The observer `instrument` installs: the spans of the turns, model calls and tool runs.

    Attributes:
        tracer: The OpenTelemetry tracer the spans are made with.
    """

    def __init__(self, tracer: Tracer) -> None:
        self.tracer = tracer

    # -- turns -------------------------------------------------------------------------------
    async def turn(self, inv: Invocation, inp: AgentInput, index: int, run: TurnRun) -> AgentOutput:
        session = inv.session
        name = inv.spec.name
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": name,
            "gen_ai.provider.name": self._provider(inv),
        }
        if session is not None:
            attributes["gen_ai.conversation.id"] = session.session_id
        if inv.parent_id is not None:
            attributes["nb_agents.parent_snapshot_id"] = inv.parent_id
        with self.tracer.start_as_current_span(
            f"invoke_agent {name}", kind=SpanKind.INTERNAL, attributes=attributes, end_on_exit=True
        ) as span:
            if inp.resume is not None:
                await self._waited(span, inv, inp.resume)
            out = await run()
            self._ended(span, out)
            return out

    @staticmethod
    def _provider(inv: Invocation) -> str:
        spec = getattr(inv.spec.handler, "_model_spec", None)
        model = spec if isinstance(spec, str) else getattr(spec, "name", None)
        return provider_and_model(model)[0] if isinstance(model, str) else "nb_agents"

    @staticmethod
    def _ended(span: Span, out: AgentOutput) -> None:
        finish = out.finish_reason or "unknown"
        span.set_attribute("nb_agents.finish_reason", finish)
        if out.snapshot_id:
            span.set_attribute("nb_agents.snapshot_id", out.snapshot_id)
        if finish == "failed":
            status = out.error.status if out.error is not None and out.error.status else "_OTHER"
            span.set_attribute("error.type", status)
            span.set_status(Status(StatusCode.ERROR, out.error.message if out.error is not None else None))
        for part in out.interrupts():
            tr = part.tool_request
            if tr is not None:
                event = {"gen_ai.tool.name": tr.name}
                if tr.ref:
                    event["gen_ai.tool.call.id"] = tr.ref
                span.add_event("hitl.pause", event)

    async def _waited(self, span: Span, inv: Invocation, resume: ToolResume) -> None:
        """The wait for a person before this answer: a ``hitl.wait`` span per answer (see the module doc)."""
        paused_at: int | None = None
        if inv.store is not None and inv.parent_id is not None:
            paused = await inv.store.get_snapshot(inv.parent_id)
            if paused is not None:
                paused_at = _iso_ns(paused.updated_at or paused.created_at)
        meta = resume.metadata if isinstance(resume.metadata, dict) else {}
        claimed = meta.get("answeredBy")
        by = principal_of(inv.options.context) or (claimed if isinstance(claimed, str) else None)
        now = datetime.now(UTC)
        answers = [
            ("respond", p.tool_response.name, p.tool_response.ref, p)
            for p in resume.respond
            if p.tool_response
        ]
        answers += [
            ("restart", p.tool_request.name, p.tool_request.ref, p) for p in resume.restart if p.tool_request
        ]
        for kind, tool, ref, part in answers:
            expired = isinstance((part.metadata or {}).get("expired"), dict)
            attributes: dict[str, Any] = {
                "gen_ai.tool.name": tool,
                "hitl.answer": "expired" if expired else kind,
                "hitl.decision": "expiry" if expired else "person",
            }
            if ref:
                attributes["gen_ai.tool.call.id"] = ref
            if by is not None and not expired:
                attributes["hitl.answered_by"] = by
            if paused_at is None:
                span.add_event("hitl.answer", attributes)
                continue
            end = int(now.timestamp() * 1e9)
            attributes["hitl.wait.seconds"] = round(max(0, end - paused_at) / 1e9, 3)
            wait = self.tracer.start_span(
                f"hitl.wait {tool}", kind=SpanKind.INTERNAL, attributes=attributes, start_time=paused_at
            )
            wait.end(end_time=end)

    # -- model calls ---------------------------------------------------------------------------
    async def model_call(
        self, ctx: TurnContext, model: str, request: GenerateRequest, run: ModelRun
    ) -> GenerateResponse:
        provider, requested = provider_and_model(model)
        attributes = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider,
            "gen_ai.request.model": requested,
            "gen_ai.conversation.id": ctx.session.session_id,
        }
        with self._span(f"chat {requested}", SpanKind.CLIENT, attributes) as span:
            response = await run(request)
            if response.finish_reason:
                span.set_attribute("gen_ai.response.finish_reasons", [response.finish_reason])
            usage = response.usage if isinstance(response.usage, dict) else {}
            for key, attr in (
                ("inputTokens", "gen_ai.usage.input_tokens"),
                ("outputTokens", "gen_ai.usage.output_tokens"),
            ):
                if isinstance(usage.get(key), int):
                    span.set_attribute(attr, usage[key])
            return response

    # -- tool runs -----------------------------------------------------------------------------
    async def tool_call(self, ctx: TurnContext, tctx: ToolContext, inp: Any, run: ToolRun) -> Any:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tctx.name,
            "gen_ai.tool.type": "function",
            "gen_ai.conversation.id": ctx.session.session_id,
        }
        if tctx.ref:
            attributes["gen_ai.tool.call.id"] = tctx.ref
        description = getattr(tctx.tool, "description", "")
        if description:
            attributes["gen_ai.tool.description"] = description
        with self._span(f"execute_tool {tctx.name}", SpanKind.INTERNAL, attributes) as span:
            try:
                output = await run(inp, tctx)
            except Interrupt:
                span.set_attribute("nb_agents.tool.outcome", "paused")
                raise
            except ToolFail:
                span.set_attribute("nb_agents.tool.outcome", "refused")
                raise
            span.set_attribute("nb_agents.tool.outcome", "done")
            return output

    @contextmanager
    def _span(self, name: str, kind: SpanKind, attributes: dict[str, Any]) -> Iterator[Span]:
        """A current span that records a failure as ``error.type`` and an error status."""
        with self.tracer.start_as_current_span(
            name, kind=kind, attributes=attributes, record_exception=False, set_status_on_exception=False
        ) as span:
            try:
                yield span
            except (Interrupt, ToolFail):
                raise  # a pause, a refusal the model reads: the call did what it should
            except Exception as exc:
                span.set_attribute("error.type", type(exc).__qualname__)
                if name.startswith("execute_tool"):
                    span.set_attribute("nb_agents.tool.outcome", "failed")
                span.set_status(Status(StatusCode.ERROR, str(exc)))
                raise


_installed: Instrumentation | None = None


def instrument(tracer_provider: TracerProvider | None = None) -> Instrumentation:
    """Trace every agent turn of this process (see the module docstring); returns the observer.

    Args:
        tracer_provider: Where spans go; None takes OpenTelemetry's global provider.

    Calling it again replaces the previous instrumentation (say, with another provider).
    """
    global _installed
    provider = tracer_provider if tracer_provider is not None else trace.get_tracer_provider()
    tracer = provider.get_tracer("nb_agents", __version__)
    _installed = Instrumentation(tracer)
    observe.install(_installed)
    return _installed


def uninstrument() -> None:
    """Stop tracing: the engine's seam goes back to plain calls."""
    global _installed
    if _installed is not None:
        observe.install(None)
        _installed = None
