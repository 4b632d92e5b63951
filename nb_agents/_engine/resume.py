"""Resume validation: what makes an answer to a paused turn acceptable.

Rules (Genkit Go's, the strictest of the runtimes; see DESIGN.md):

* the history must end in a model message with tool requests;
* each respond/restart must name a tool request (name + ref) of that latest
  model message that paused; one from an earlier turn gets its own error, one
  that finished in the paused round (its output is kept) is refused, and an
  answer built by nb_agents' builders for another pause (its
  ``metadata.interruptDigest``) is refused too; a (name, ref) that occurs twice
  in the latest message cannot be answered at all;
* a restart's input must equal the original, unless the part carries
  ``metadata.replacedInput`` equal to the original and the new input fits the
  tool's input schema;
* a respond's output must fit the tool's output schema (a denial of a held
  call and a cancel, ``{"cancelled": ...}``, are not outputs), a restart's
  ``resumed`` value the tool's resume type;
* ``approve(always=True)`` (``resumed.always``) answers only a call held for
  approval (a rule for a question the tool asks would never be consulted);
* a call that an earlier answer started, in a turn that then failed or was
  aborted (a fork's pause marked ``metadata.started``), restarts only with
  ``retry=True``;
* every interrupted request must be answered, and only once.

Validation runs before anything executes, so a rejected resume consumes
nothing and the same interrupt can be answered again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from pydantic import ValidationError

from .._json import canonical
from ..errors import FailedPreconditionError, InvalidArgumentError
from ..interrupts import held_for_approval, interrupt_digest, is_cancel
from ..rules import always_asked, rule_scope
from ..tools import Tool
from ..types import Message, Part, ToolResume

__all__ = ["answered_first", "resume_digest", "validate_resume"]


def resume_digest(resume: ToolResume) -> str:
    """A stable digest of an answer, to recognise the same resume sent twice.

    Who says they answered (``metadata.answeredBy``) is not part of the answer:
    the same answer from a form and from code, or from two people, is the same.
    """
    metadata = resume.metadata
    if isinstance(metadata, dict) and "answeredBy" in metadata:
        metadata = {k: v for k, v in metadata.items() if k != "answeredBy"} or None
    body = {
        "respond": [p.to_wire() for p in resume.respond],
        "restart": [p.to_wire() for p in resume.restart],
        "metadata": metadata,
    }
    return hashlib.sha256(canonical(body).encode()).hexdigest()


def _ref(ref: str | None) -> str:
    return f" (ref: {ref})" if ref else ""


def answered_first(
    resume: ToolResume, paused: Message | None, snapshot_id: str
) -> FailedPreconditionError | None:
    """After a partial answer moved on (`exactly_once.Moved`) to `snapshot_id`, the turn another
    answer left paused on `paused`: the refusal of this answer if it answers a call that one
    answered (in `paused`, the call no longer pauses), else None (what still waits may take it).

    Its details name the snapshot to go on from (``alreadyResumed``), as for a whole answer
    that another went before (the chat raises it as `AlreadyResumedError`).
    """
    held = (
        {(p.tool_request.name, p.tool_request.ref): p for p in paused.tool_requests if p.tool_request}
        if paused
        else {}
    )
    answers = [p.tool_request for p in resume.restart] + [p.tool_response for p in resume.respond]
    taken = [
        a
        for a in answers
        if a is not None and (a.name, a.ref) in held and not held[a.name, a.ref].is_interrupt
    ]
    if not taken:
        return None
    calls = ", ".join(f"'{a.name}'{_ref(a.ref)}" for a in taken)
    one = len(taken) == 1
    return FailedPreconditionError(
        f"The {'call' if one else 'calls'} {calls} {'was' if one else 'were'} already answered by another "
        f"answer, which went first; the rest of the turn waits in snapshot {snapshot_id}: answer what "
        f"still waits there, not {'this call' if one else 'these calls'} again.",
        details={"alreadyResumed": snapshot_id},
    )


def _errors(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(x) for x in e['loc']) or 'value'}: {e['msg']}" for e in exc.errors())


def validate_resume(
    resume: ToolResume,
    messages: list[Message],
    tools: Mapping[str, Tool],
    *,
    partial: bool = False,
    retry: bool = False,
) -> None:
    """Check `resume` against the history; raise the Genkit error if it is wrong.

    With `partial` (nb_agents' ``AgentInput.partial``), interrupts may be left
    unanswered: the turn stays paused on them; at least one must be answered.
    With `retry`, a call an earlier answer started may run again.
    """
    last = messages[-1] if messages else None
    if last is None or last.role != "model" or not last.tool_requests:
        raise FailedPreconditionError(
            "Cannot 'resume' generation unless the previous message is a model message "
            "with at least one tool request."
        )
    latest: dict[tuple[str, str | None], Part] = {}
    for p in last.tool_requests:
        assert p.tool_request is not None
        key = (p.tool_request.name, p.tool_request.ref)
        if key in latest:
            raise InvalidArgumentError(
                f"the paused model message has two requests of tool '{key[0]}'{_ref(key[1])}; an answer "
                "cannot tell them apart, so this turn cannot be resumed (the model gave two calls one ref)"
            )
        latest[key] = p

    def in_earlier_turn(key: tuple[str, str | None]) -> bool:
        # only on the error path: walking the whole history is what a turn must not pay for
        return any(
            (p.tool_request.name, p.tool_request.ref) == key
            for m in messages[:-1]
            if m.role == "model"
            for p in m.content
            if p.tool_request is not None
        )

    # each answer with the paused call it answers: one entry per interrupted request at most
    answered: set[tuple[str, str | None]] = set()
    originals: list[Part] = []
    for kind, part in [("restart", p) for p in resume.restart] + [("respond", p) for p in resume.respond]:
        call = part.tool_request if kind == "restart" else part.tool_response
        if call is None:
            wanted = "toolRequest" if kind == "restart" else "toolResponse"
            raise InvalidArgumentError(f"resume.{kind} entries must be {wanted} parts, got {part.to_json()}")
        name, ref = key = (call.name, call.ref)
        if key in answered:
            raise InvalidArgumentError(
                f"resume.{kind} answers tool '{name}'{_ref(ref)} more than once; "
                "give one respond or restart per interrupted tool request."
            )
        answered.add(key)
        found = latest.get(key)
        if found is None and in_earlier_turn(key):
            raise InvalidArgumentError(
                f'resume.{kind} references tool "{name}"{_ref(ref)} from an earlier turn which is '
                "no longer pending; only tool requests from the most recent model response can be resumed"
            )
        if found is None:
            raise InvalidArgumentError(
                f"resume.{kind} references tool '{name}'{_ref(ref)} which was not found in session history."
            )
        if not found.is_interrupt:
            raise InvalidArgumentError(
                f"resume.{kind} references tool '{name}'{_ref(ref)}, which did not pause: it finished "
                "in the paused round and its output is kept; answer only the interrupted requests."
            )
        given = (part.metadata or {}).get("interruptDigest")
        if given is not None and given != interrupt_digest(found):
            raise InvalidArgumentError(
                f"resume.{kind} for tool '{name}'{_ref(ref)} was built for another pause of that call "
                "(an earlier turn's request with the same ref, or other input or question); build the "
                "answer from the latest response's interrupts."
            )
        originals.append(found)

    for part, original in zip(resume.restart, originals[: len(resume.restart)], strict=True):
        tr = part.tool_request
        assert tr is not None and original.tool_request is not None
        meta = part.metadata or {}
        if "replacedInput" in meta:
            if canonical(meta["replacedInput"]) != canonical(original.tool_request.input):
                raise InvalidArgumentError(
                    f"resume.restart for tool '{tr.name}'{_ref(tr.ref)} has a replacedInput that does not "
                    "match the original tool request in session history."
                )
        elif tr.input is not original.tool_request.input and canonical(tr.input) != canonical(
            original.tool_request.input
        ):  # the same object when the answer was built in process from the paused request
            raise InvalidArgumentError(
                f"resume.restart for tool '{tr.name}'{_ref(tr.ref)} has modified inputs that do not match "
                "the original tool request in session history. Restart inputs must exactly match the "
                "interrupted tool request."
            )
        tool = tools.get(tr.name)
        if tool is None:
            raise InvalidArgumentError(
                f"resume.restart references tool '{tr.name}'{_ref(tr.ref)} which this agent does not have; "
                "answer it with respond instead."
            )
        if always_asked(meta.get("resumed")) and not held_for_approval(original):
            raise InvalidArgumentError(
                f"resume.restart for tool '{tr.name}'{_ref(tr.ref)} asks for an 'always' rule "
                "(approve(always=True)), but that call is not held for approval: it asks a question of "
                "its own, which a rule cannot answer. Answer it without always=True."
            )
        if always_asked(meta.get("resumed")):
            try:
                rule_scope(meta.get("resumed"))
            except ValueError as exc:
                raise InvalidArgumentError(
                    f"resume.restart for tool '{tr.name}'{_ref(tr.ref)}: {exc}"
                ) from None
        started = (original.metadata or {}).get("started")
        if started is not None and not retry:
            where = started.get("snapshotId") if isinstance(started, dict) else None
            raise FailedPreconditionError(
                f"resume.restart for tool '{tr.name}'{_ref(tr.ref)}: an earlier answer already started this "
                f"call (turn {where}), and that turn did not finish, so the call may have acted. It runs "
                "again only on an explicit retry (retry=True); answer it with respond to run nothing.",
                details={"retry": True, "attempt": where},
            )
        try:
            if "replacedInput" in meta:
                tool.parse_input(tr.input)
        except ValidationError as exc:
            raise InvalidArgumentError(
                f"resume.restart for tool '{tr.name}'{_ref(tr.ref)} has a replaced input that fails the "
                f"tool's input schema: {_errors(exc)}"
            ) from exc
        try:
            pause = (original.metadata or {}).get("interrupt")
            tool.check_resume(meta.get("resumed"), pause if isinstance(pause, dict) else None)
        except ValidationError as exc:
            raise InvalidArgumentError(
                f"resume.restart for tool '{tr.name}'{_ref(tr.ref)} has a resumed value that fails the "
                f"tool's resume schema: {_errors(exc)}"
            ) from exc

    for part, original in zip(resume.respond, originals[len(resume.restart) :], strict=True):
        resp = part.tool_response
        assert resp is not None
        tool = tools.get(resp.name)
        # a call held for approval that the human denies never ran: the answer tells the
        # model so, it is not the tool's output, so the output schema does not apply
        # nor does it to a denial on expiry (checked against the declared default before this)
        mark = (part.metadata or {}).get("expired")
        applied = mark.get("applied") if isinstance(mark, dict) else None
        expired_denial = isinstance(applied, dict) and "deny" in applied
        # a cancel says the person abandoned the call: not the tool's output either
        if (
            tool is not None
            and not held_for_approval(original)
            and not expired_denial
            and not is_cancel(part)
        ):
            try:
                tool.check_output(resp.output)
            except ValidationError as exc:
                raise InvalidArgumentError(
                    f"resume.respond for tool '{resp.name}'{_ref(resp.ref)} output validation failed: "
                    f"{_errors(exc)}"
                ) from exc

    if partial:
        if not answered:
            raise InvalidArgumentError("a partial resume answers at least one interrupted tool request")
        return
    for key, part in latest.items():
        if key in answered or "pendingOutput" in (part.metadata or {}):
            continue
        name, ref = key
        raise InvalidArgumentError(
            f"Unresolved tool request '{name}#{ref or ''}' was not handled by the 'resume' argument. "
            "You must supply replies or restarts for all interrupted tool requests.",
            # Genkit's text, exactly; the way out is nb_agents' own
            details={"hint": "resume with partial=True to answer some now and the rest later"},
        )
