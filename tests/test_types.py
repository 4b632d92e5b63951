"""Wire types: Genkit's captured JSON parses and round-trips exactly."""

from __future__ import annotations

import copy
import typing
from typing import Any

import pytest

import nb_agents as nba
from nb_agents.types import AGENT_FINISH_REASONS

# -- captures from reference/genkit-semantics.md ("…" elisions filled in) -----------------

INTERRUPTED_MESSAGE: dict[str, Any] = {  # §3.2, closed after the interrupt part
    "role": "model",
    "content": [
        {"text": "Let me check."},
        {
            "toolRequest": {"name": "lookup", "ref": "a1", "input": {"q": "balance"}},
            "metadata": {"pendingOutput": {"balance": 900}},
        },
        {
            "toolRequest": {
                "name": "userApproval",
                "ref": "b2",
                "input": {"action": "transfer", "details": "$500"},
            },
            "metadata": {"interrupt": True},
        },
    ],
}

SNAPSHOT: dict[str, Any] = {  # §2.2
    "snapshotId": "3476a1c2-0000-4000-8000-000000000001",
    "sessionId": "ab5a77e0-0000-4000-8000-000000000002",
    "parentId": "1216b3d4-0000-4000-8000-000000000003",
    "createdAt": "2026-08-21T10:00:00.000Z",
    "updatedAt": "2026-08-21T10:00:01.000Z",
    "status": "completed",
    "finishReason": "stop",
    "state": {
        "sessionId": "ab5a77e0-0000-4000-8000-000000000002",
        "artifacts": [],
        "messages": [
            {"role": "user", "content": [{"text": "do both"}]},
            {
                "role": "model",
                "content": [
                    {"text": "Let me check."},
                    {
                        "toolRequest": {"name": "lookup", "ref": "a1", "input": {"q": "balance"}},
                        "metadata": {},
                    },
                    {
                        "toolRequest": {
                            "name": "userApproval",
                            "ref": "b2",
                            "input": {"action": "transfer", "details": "$500"},
                        },
                        "metadata": {"resolvedInterrupt": True},
                    },
                ],
            },
            {
                "role": "tool",
                "content": [
                    {
                        "toolResponse": {"name": "lookup", "ref": "a1", "output": {"balance": 900}},
                        "metadata": {"source": "pending"},
                    },
                    {"toolResponse": {"name": "userApproval", "ref": "b2", "output": {"approved": True}}},
                ],
                "metadata": {"resumed": True},
            },
            {"role": "model", "content": [{"text": "Done: transferred $500."}]},
        ],
    },
}

REQUEST_NEW = {  # §6.2, first body
    "data": {"message": {"role": "user", "content": [{"text": "Transfer $500 to my savings account."}]}},
    "init": {},
}
REQUEST_RESUME = {  # §6.2, second body
    "data": {
        "resume": {
            "respond": [
                {
                    "toolResponse": {
                        "name": "userApproval",
                        "ref": "r1",
                        "output": {"approved": True, "feedback": "ok"},
                    }
                }
            ]
        }
    },
    "init": {"snapshotId": "a477c0de-0000-4000-8000-000000000004"},
}
REQUEST_CLIENT_STATE = {  # §6.2, third body (client-managed)
    "data": {"message": {"role": "user", "content": [{"text": "again"}]}},
    "init": {
        "state": {
            "sessionId": "d13f0000-0000-4000-8000-000000000005",
            "messages": [
                {"role": "user", "content": [{"text": "hi"}]},
                {"role": "model", "content": [{"text": "hello"}]},
                {"role": "user", "content": [{"text": "count"}]},
                {"role": "model", "content": [{"text": "one"}]},
            ],
            "custom": {"turns": 1},
        }
    },
}

RESUME_STREAM = [  # §3.4
    {"message": {"modelChunk": {"role": "model", "index": 1, "content": [{"text": "Done: ok"}]}}},
    {"message": {"turnEnd": {"snapshotId": "e7c6aa00-0000-4000-8000-000000000006", "finishReason": "stop"}}},
    {
        "result": {
            "sessionId": "21f40000-0000-4000-8000-000000000007",
            "message": {"role": "model", "content": [{"text": "Done: ok"}]},
            "finishReason": "stop",
            "snapshotId": "e7c6aa00-0000-4000-8000-000000000006",
        }
    },
]
INTERRUPT_STREAM = [  # §3.7
    {"message": {"modelChunk": {"role": "tool", "content": INTERRUPTED_MESSAGE["content"][1:]}}},
    {
        "message": {
            "turnEnd": {"snapshotId": "5ce80000-0000-4000-8000-000000000008", "finishReason": "interrupted"}
        }
    },
    {
        "result": {
            "sessionId": "9f230000-0000-4000-8000-000000000009",
            "message": INTERRUPTED_MESSAGE,
            "finishReason": "interrupted",
            "snapshotId": "5ce80000-0000-4000-8000-000000000008",
        }
    },
]


def _roundtrip(model: type[nba.types.WireModel], data: dict[str, Any]) -> None:
    original = copy.deepcopy(data)
    assert model.model_validate(data).to_wire() == original
    assert data == original  # parsing did not touch the input


def test_snapshot_capture_roundtrips() -> None:
    _roundtrip(nba.SessionSnapshot, SNAPSHOT)
    snap = nba.SessionSnapshot.model_validate(SNAPSHOT)
    assert snap.parent_id == SNAPSHOT["parentId"]
    assert snap.state is not None and snap.state.messages[2].metadata == {"resumed": True}
    assert snap.state.messages[1].content[2].metadata == {"resolvedInterrupt": True}


def test_interrupted_message_roundtrips() -> None:
    _roundtrip(nba.Message, INTERRUPTED_MESSAGE)
    msg = nba.Message.model_validate(INTERRUPTED_MESSAGE)
    assert [p.tool_request.name for p in msg.interrupts()] == ["userApproval"]


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(REQUEST_NEW, id="new-chat"),
        pytest.param(
            REQUEST_RESUME,
            id="resume-respond",
        ),
        pytest.param(
            REQUEST_CLIENT_STATE,
            id="client-state",
        ),
    ],
)
def test_http_request_bodies_roundtrip(body: dict[str, Any]) -> None:
    _roundtrip(nba.AgentInput, body["data"])
    _roundtrip(nba.AgentInit, body["init"])


def test_http_request_bodies_parse() -> None:
    resume = nba.AgentInput.model_validate(REQUEST_RESUME["data"]).resume
    assert resume is not None and resume.respond[0].tool_response.output == {
        "approved": True,
        "feedback": "ok",
    }
    assert nba.AgentInit.model_validate(REQUEST_RESUME["init"]).snapshot_id.startswith("a477")
    init = nba.AgentInit.model_validate(REQUEST_CLIENT_STATE["init"])
    assert init.state is not None and init.state.custom == {"turns": 1} and len(init.state.messages) == 4


@pytest.mark.parametrize("frame", RESUME_STREAM + INTERRUPT_STREAM)
def test_stream_frames_roundtrip(frame: dict[str, Any]) -> None:
    if "message" in frame:
        _roundtrip(nba.AgentStreamChunk, frame["message"])
    else:
        _roundtrip(nba.AgentOutput, frame["result"])


def test_stream_frames_parse_to_snake_case() -> None:
    chunk = nba.AgentStreamChunk.model_validate(INTERRUPT_STREAM[0]["message"])
    assert chunk.model_chunk is not None and chunk.model_chunk.role == "tool"
    assert [p.tool_request.ref for p in chunk.model_chunk.interrupts()] == ["b2"]
    end = nba.AgentStreamChunk.model_validate(INTERRUPT_STREAM[1]["message"]).turn_end
    assert end is not None and end.finish_reason == "interrupted" and end.snapshot_id.startswith("5ce8")
    out = nba.AgentOutput.model_validate(INTERRUPT_STREAM[2]["result"])
    assert out.finish_reason == "interrupted"
    assert out.session_id.startswith("9f23")
    assert out.message is not None and out.message.content[2].tool_request.name == "userApproval"
    assert [p.tool_request.name for p in out.interrupts()] == ["userApproval"]


# -- unknown fields ---------------------------------------------------------------------


def test_unknown_field_on_state_roundtrips() -> None:
    state = {
        "sessionId": "s1",
        "messages": [{"role": "user", "content": [{"text": "hi"}]}],
        "custom": {"n": 1},
        "artifacts": [],
        "signature": "deadbeef",
    }
    parsed = nba.SessionState.model_validate(state)
    assert parsed.to_wire() == state
    out = {"sessionId": "s1", "finishReason": "stop", "state": state}
    assert nba.AgentOutput.model_validate(out).to_wire() == out


def test_unknown_fields_at_every_level_roundtrip() -> None:
    out = {
        "sessionId": "s1",
        "finishReason": "stop",
        "futureField": {"a": [1, 2]},
        "message": {
            "role": "model",
            "content": [{"text": "x", "resource": {"uri": "r://1"}}],
            "newMessageKey": True,
        },
    }
    assert nba.AgentOutput.model_validate(out).to_wire() == out


# -- finish reasons ---------------------------------------------------------------------

NINE = {"stop", "length", "blocked", "interrupted", "other", "unknown", "aborted", "detached", "failed"}


def test_finish_reason_has_exactly_nine_values() -> None:
    assert len(AGENT_FINISH_REASONS) == 9
    assert set(AGENT_FINISH_REASONS) == NINE
    args = typing.get_args(nba.FinishReason)
    assert len(args) == 9 and set(args) == NINE


def test_finish_reason_is_validated() -> None:
    with pytest.raises(ValueError):
        nba.AgentOutput.model_validate({"finishReason": "exploded"})
    with pytest.raises(ValueError):
        nba.TurnEnd.model_validate({"finishReason": "exploded"})


# -- snake_case access and construction -------------------------------------------------


def test_snake_case_attributes_and_camel_case_wire() -> None:
    out = nba.AgentOutput.model_validate({"finishReason": "stop", "snapshotId": "x", "sessionId": "s"})
    assert (out.finish_reason, out.snapshot_id, out.session_id) == ("stop", "x", "s")
    part = nba.Part.model_validate({"toolRequest": {"name": "getBalance", "ref": "1", "input": {}}})
    assert part.tool_request is not None and part.tool_request.name == "getBalance"
    built = nba.Part(tool_response=nba.ToolResponse(name="t", ref="r", output=3))
    assert built.to_wire() == {"toolResponse": {"name": "t", "ref": "r", "output": 3}}
    assert nba.TurnEnd(snapshot_id="a", finish_reason="failed").to_wire() == {
        "snapshotId": "a",
        "finishReason": "failed",
    }


# -- Part / Message helpers -------------------------------------------------------------


def test_part_is_interrupt() -> None:
    content = nba.Message.model_validate(INTERRUPTED_MESSAGE).content
    assert [p.is_interrupt for p in content] == [False, False, True]
    data_interrupt = nba.Part.model_validate(
        {"toolRequest": {"name": "t"}, "metadata": {"interrupt": {"why": "ask"}}}
    )
    assert data_interrupt.is_interrupt
    # metadata.interrupt on a non-request part, or a falsy value, is not an interrupt
    assert not nba.Part.model_validate({"text": "x", "metadata": {"interrupt": True}}).is_interrupt
    assert not nba.Part.model_validate(
        {"toolRequest": {"name": "t"}, "metadata": {"interrupt": False}}
    ).is_interrupt
    resolved = nba.Part.model_validate(
        {"toolRequest": {"name": "t"}, "metadata": {"resolvedInterrupt": True}}
    )
    assert not resolved.is_interrupt


def test_message_interrupts() -> None:
    msg = nba.Message.model_validate(INTERRUPTED_MESSAGE)
    parts = msg.interrupts()
    assert len(parts) == 1 and parts[0].tool_request.ref == "b2"
    assert nba.Message(role="model", content=[nba.Part(text="hi")]).interrupts() == []


def test_part_with_metadata_sets_and_removes_without_mutating() -> None:
    part = nba.Part.model_validate(
        {"toolRequest": {"name": "t", "ref": "1", "input": {}}, "metadata": {"interrupt": True, "keep": 1}}
    )
    before = part.to_wire()
    changed = part.with_metadata(interrupt=None, resolvedInterrupt=True)
    assert changed.metadata == {"keep": 1, "resolvedInterrupt": True}
    assert part.to_wire() == before  # the original is unchanged
    assert part.metadata == {"interrupt": True, "keep": 1}
    assert changed.tool_request == part.tool_request
    # removing a missing key is fine; adding to a part without metadata works
    assert nba.Part(text="x").with_metadata(gone=None, new="v").metadata == {"new": "v"}


@pytest.mark.parametrize("stored", [True, False])
def test_a_turn_output_is_the_output_validation_would_build(stored: bool) -> None:
    """The engine sets its outputs' slots itself (no validation): the same model, fields set,
    extra and private attributes as `AgentOutput(...)` of the same values builds."""
    from nb_agents.testing import FunctionModel

    # the engine fills only what it is given: every other field must default to None, and the
    # private attributes' defaults are shared by every output, so none may be mutable
    assert all(f.default is None and f.default_factory is None for f in nba.AgentOutput.model_fields.values())
    assert all(
        a.default is None or type(a.default) is bool for a in nba.AgentOutput.__private_attributes__.values()
    )
    store = nba.InMemorySessionStore() if stored else None
    agent = nba.define_agent("echo", model=FunctionModel(lambda req: "hi"), store=store)
    msg = nba.Message(role="user", content=[nba.Part(text="x")])
    out = agent.invoke_sync(nba.AgentInput(message=msg), nba.AgentInit())
    built = nba.AgentOutput(**{name: getattr(out, name) for name in out.model_fields_set})
    assert out.__dict__ == built.__dict__ and out.model_fields_set == built.model_fields_set
    assert out.to_wire() == built.to_wire() and out.__pydantic_extra__ == built.__pydantic_extra__ == {}
    assert set(out.__pydantic_private__) == set(built.__pydantic_private__)
    assert (out._history is not None) == stored and out.finish_reason == "stop"


def test_the_ids_a_turn_makes_are_random_canonical_uuid4s() -> None:
    """Session and snapshot ids: version 4, RFC 9562's variant, lowercase 8-4-4-4-12, all different."""
    import uuid

    from nb_agents.testing import FunctionModel

    agent = nba.define_agent("echo", model=FunctionModel(lambda req: "hi"), store=nba.InMemorySessionStore())
    ids: list[str] = []
    for _ in range(50):
        res = agent.chat().send_sync("x")
        ids += [res.session_id or "", res.snapshot_id or ""]
    for made in ids:
        parsed = uuid.UUID(made)
        assert str(parsed) == made and parsed.version == 4 and parsed.variant == uuid.RFC_4122, made
    assert len(set(ids)) == len(ids)


def test_made_builds_the_model_validation_builds_from_values_of_their_types() -> None:
    """`types.made` (the engine's rows, states and outputs): the same fields, fields set, extra
    and private attributes as the validated model, defaults filled fresh for each."""
    from nb_agents._made import made

    msg = nba.Message(role="user", content=[nba.Part(text="x")])
    state_values = {"session_id": "s", "messages": [msg], "custom": {"n": 1}}
    row_values = {"snapshot_id": "r", "status": "completed", "finish_reason": "stop", "timing": {"ms": 1}}
    for cls, values in [
        (nba.SessionState, state_values),
        (nba.SessionSnapshot, {**row_values, "state": made(nba.SessionState, state_values)}),
        (nba.AgentOutput, {"session_id": "s", "message": msg, "finish_reason": "interrupted"}),
    ]:
        got, want = made(cls, values), cls(**values)
        assert (
            type(got) is cls and got.__dict__ == want.__dict__ and list(got.__dict__) == list(want.__dict__)
        )
        assert got.model_fields_set == want.model_fields_set and got.to_wire() == want.to_wire()
        assert got.__pydantic_extra__ == want.__pydantic_extra__ and repr(got) == repr(want)
        assert got.__pydantic_private__ == want.__pydantic_private__
    # a default made by a factory is the instance's own
    one, two = made(nba.SessionState, {}), made(nba.SessionState, {})
    assert one.messages == [] and one.messages is not two.messages
    assert made(nba.AgentOutput, {}, _history=[msg]).__pydantic_private__["_history"] == [msg]


def test_made_like_a_model_is_its_model_copy_with_the_update() -> None:
    """``made(cls, update, like=m)`` is ``m.model_copy(update=update)``: extra fields (a provider's
    own keys) and private attributes kept, the updated fields set, the original untouched."""
    from nb_agents._made import made

    part = nba.Part.model_validate({"text": "hi", "providerKey": {"a": 1}})
    msg = nba.Message.model_validate({"role": "model", "content": [{"text": "x"}], "vendor": "v"})
    out = nba.AgentOutput(session_id="s")
    out._history = [msg]
    for model, update in [
        (part, {"metadata": {"k": 1}}),
        (msg, {"content": [part]}),
        (out, {"snapshot_id": "r"}),
    ]:
        got, want = made(type(model), update, like=model), model.model_copy(update=update)
        assert got.__dict__ == want.__dict__ and got.model_fields_set == want.model_fields_set
        assert got.__pydantic_extra__ == want.__pydantic_extra__ and got.to_wire() == want.to_wire()
        assert got.__pydantic_private__ == want.__pydantic_private__
        assert got.__pydantic_extra__ is not model.__pydantic_extra__ or model.__pydantic_extra__ is None
    assert part.metadata is None and msg.content[0].text == "x"


def test_made_refuses_a_model_it_cannot_build_whole() -> None:
    """A required field left out is an error naming it, not a model holding pydantic's marker."""
    from nb_agents._made import made

    with pytest.raises(TypeError, match="SessionSnapshot needs snapshot_id"):
        made(nba.SessionSnapshot, {"status": "pending"})
    assert made(nba.SessionSnapshot, {"snapshot_id": "r"}).snapshot_id == "r"
