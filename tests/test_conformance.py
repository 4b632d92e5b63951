"""Genkit's cross-language agent conformance spec, run against nb_agents.

Loads ``../shared/conformance/agent.yaml`` (Genkit's ``tests/specs/agent.yaml``) and runs each
case as one test against agents built fresh per case with nb_agents' public API; see
``../shared/conformance/README.md`` for the harness contract. Matching, as the spec says:

* ``expectChunks``: same count and order; ``turnEnd`` by presence plus ``finishReason`` when
  pinned; ``modelChunk``/``artifact``/``customPatch`` payloads by subset.
* subset (``stateContains``, chunk payloads, ``artifactsContain``): objects may carry extra
  keys; the spec's list items must appear in order (``messages`` as an ordered subsequence).
* ``message``: deep-equal on what the spec pins (lists item by item, same length); keys the
  spec leaves out (``role``, the ``metadata.interrupt`` marker on paused tool requests) are
  not compared, as in Genkit's own harnesses, or no runtime could pass.
* ``errorContains``/``expectError``: ``status`` exact, ``message`` as a substring.

A spec key the harness does not handle fails the case, so nothing is skipped silently.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml
from pydantic import BaseModel
from store_kinds import STORE_KINDS, make_store

import nb_agents as nba
from nb_agents.testing import ScriptedModel

SPEC_PATH = Path(__file__).resolve().parents[2] / "shared" / "conformance" / "agent.yaml"
if not SPEC_PATH.is_file():
    pytest.skip(
        f"Genkit conformance spec not found at {SPEC_PATH} (the ../shared folder beside the repo is absent)",
        allow_module_level=True,
    )

SPEC: dict[str, Any] = yaml.safe_load(SPEC_PATH.read_text(encoding="utf-8"))
CASES: list[dict[str, Any]] = SPEC["tests"]

STEP_TIMEOUT = 10.0  # seconds for one send step
TERMINAL = ("completed", "failed", "aborted")

TOP_KEYS = {"tests"}
CASE_KEYS = {"name", "description", "agent", "steps"}
STEP_KEYS = {
    "send": {
        "type", "init", "inputs", "modelResponses", "streamChunks", "expectChunks", "expectOutput",
        "expectError", "captureSnapshotId", "captureState", "captureSessionId",
    },
    "getSnapshotData": {"type", "snapshotId", "sessionId", "expectSnapshot"},
    "abort": {"type", "snapshotId", "expectPreviousStatus"},
    "waitUntilCompleted": {"type", "snapshotId", "timeoutMs", "expectSnapshot"},
}  # fmt: skip
INIT_KEYS = {"snapshotId", "sessionId", "state"}
INPUT_KEYS = {"message", "resume", "detach"}
OUTPUT_KEYS = {
    "message", "finishReason", "hasSnapshotId", "hasSessionId", "stateContains", "artifactsContain",
    "errorContains",
}  # fmt: skip
SNAPSHOT_KEYS = {"parentId", "status", "finishReason", "hasSessionId", "stateContains", "errorContains"}
ERROR_KEYS = {"status", "message"}
CHUNK_KINDS = {"modelChunk", "customPatch", "artifact", "turnEnd"}


def check_keys(where: str, mapping: Any, allowed: set[str]) -> None:
    assert isinstance(mapping, dict), f"{where}: expected a mapping in the spec, got {mapping!r}"
    unknown = sorted(set(mapping) - allowed)
    assert not unknown, f"{where}: spec key(s) {unknown} are not handled by this harness"


# -- tools and agents (fresh per case) ------------------------------------------------------


class Query(BaseModel):
    query: str


class Answer(BaseModel):
    answer: str


@nba.tool(name="testTool", description="A simple test tool")
async def tool_called() -> str:
    return "tool called"


interrupt_tool = nba.define_interrupt(
    name="interruptTool", description="An interrupt tool", input_schema=Query, output_schema=Answer
)


@nba.tool(name="restartTool", description="Asks for confirmation, then runs when restarted")
async def restart_tool(action: str, ctx: nba.ToolContext) -> dict[str, str]:
    if not ctx.resumed:
        ctx.interrupt()
    return {"result": f"done: {action}"}


Handler = Callable[[nba.AgentInput, nba.TurnContext], Awaitable[nba.Message | str | None]]


async def blocking(inp: nba.AgentInput, ctx: nba.TurnContext) -> str:
    await ctx.abort_signal.wait()
    return "unblocked"


async def failing(inp: nba.AgentInput, ctx: nba.TurnContext) -> str:
    raise RuntimeError("intentional failure")


async def with_artifacts(inp: nba.AgentInput, ctx: nba.TurnContext) -> str:
    for name, text in (("doc1", "v1"), ("doc1", "v2"), ("doc2", "other")):
        await ctx.session.add_artifacts([{"name": name, "parts": [{"text": text}]}])
    return "done"


async def counter(inp: nba.AgentInput, ctx: nba.TurnContext) -> str:
    await ctx.session.update_custom(lambda cur: {"counter": ((cur or {}).get("counter") or 0) + 1})
    return "done"


async def multi_custom(inp: nba.AgentInput, ctx: nba.TurnContext) -> str:
    await ctx.session.update_custom(lambda _cur: {"counter": 1, "status": "working"})
    await ctx.session.update_custom(lambda cur: {**cur, "counter": 2})
    await ctx.session.update_custom(lambda cur: {**cur, "status": "done"})
    return "done"


async def numbered_artifact(inp: nba.AgentInput, ctx: nba.TurnContext) -> str:
    n = len(ctx.session.artifacts) + 1
    await ctx.session.add_artifacts([{"name": f"doc{n}", "parts": [{"text": f"content{n}"}]}])
    return "done"


PROMPT_AGENTS: dict[str, tuple[list[nba.Tool], bool]] = {  # name -> (tools, has store)
    "promptAgent": ([], False),
    "promptAgentWithStore": ([], True),
    "promptAgentWithTools": ([tool_called], False),
    "promptAgentWithInterrupt": ([interrupt_tool], True),
    "promptAgentWithRestartTool": ([restart_tool], True),
}
CUSTOM_AGENTS: dict[str, tuple[Handler, bool]] = {  # name -> (turn handler, has store)
    "customAgentBlocking": (blocking, True),
    "customAgentFailing": (failing, True),
    "customAgentWithArtifacts": (with_artifacts, False),
    "customAgentWithCustomState": (counter, False),
    "customAgentWithMultiCustomState": (multi_custom, False),
    "customAgentWithArtifactsStore": (numbered_artifact, True),
    "customAgentWithCustomStateStore": (counter, True),
}


def build_agent(
    name: str, new_store: Callable[[], nba.SessionStore]
) -> tuple[nba.Agent, ScriptedModel | None]:
    """The named harness agent with a fresh store (and model, for prompt agents)."""
    if name in PROMPT_AGENTS:
        tools, has_store = PROMPT_AGENTS[name]
        model = ScriptedModel([], name="programmableModel")
        store = new_store() if has_store else None
        return nba.define_agent(name, model=model, tools=tools, store=store), model
    assert name in CUSTOM_AGENTS, f"the spec names agent {name!r}, which this harness does not define"
    handler, has_store = CUSTOM_AGENTS[name]
    store = new_store() if has_store else None
    return nba.define_custom_agent(name, handler, store=store), None


# -- templates and matching ---------------------------------------------------------------

TEMPLATE = re.compile(r"\{\{(\w+)\}\}")


def resolve(value: Any, captures: dict[str, Any]) -> Any:
    """Replace ``{{name}}`` with captured values (a whole-string reference keeps its type)."""

    def lookup(name: str) -> Any:
        assert name in captures, f"template {{{{{name}}}}} used before it was captured"
        return captures[name]

    if isinstance(value, str):
        whole = TEMPLATE.fullmatch(value)
        if whole:
            return lookup(whole[1])
        return TEMPLATE.sub(lambda m: str(lookup(m[1])), value)
    if isinstance(value, list):
        return [resolve(v, captures) for v in value]
    if isinstance(value, dict):
        return {k: resolve(v, captures) for k, v in value.items()}
    return value


def scalar_eq(actual: Any, expected: Any, path: str) -> None:
    same = actual == expected and isinstance(actual, bool) == isinstance(expected, bool)
    assert same, f"{path}: expected {expected!r}, got {actual!r}"


def match(actual: Any, expected: Any, path: str, *, subsequence: bool = True) -> None:
    """Objects: the spec's keys must match, extra keys are allowed. Lists: with `subsequence`, the
    spec's items must appear in order among the actual ones; else item by item, same length."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict), f"{path}: expected an object, got {actual!r}"
        for key, val in expected.items():
            match(actual.get(key), val, f"{path}.{key}", subsequence=subsequence)
    elif isinstance(expected, list) and not subsequence:
        assert isinstance(actual, list) and len(actual) == len(expected), (
            f"{path}: expected {len(expected)} item(s) {expected!r}, got {actual!r}"
        )
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            match(a, e, f"{path}[{i}]", subsequence=False)
    elif isinstance(expected, list):
        assert isinstance(actual, list), f"{path}: expected a list, got {actual!r}"
        pos = 0
        for i, item in enumerate(expected):
            while pos < len(actual):
                pos += 1
                try:
                    match(actual[pos - 1], item, f"{path}[{pos - 1}]")
                    break
                except AssertionError:
                    continue
            else:
                raise AssertionError(f"{path}[{i}]: {item!r} not found in order in {actual!r}")
    else:
        scalar_eq(actual, expected, path)


def error_match(actual: Any, expected: dict[str, Any], path: str) -> None:
    check_keys(f"{path} (errorContains)", expected, ERROR_KEYS)
    assert isinstance(actual, dict), f"{path}: expected an error, got {actual!r}"
    if "status" in expected:
        scalar_eq(actual.get("status"), expected["status"], f"{path}.status")
    if "message" in expected:
        assert expected["message"] in (actual.get("message") or ""), (
            f"{path}.message: expected it to contain {expected['message']!r}, got {actual.get('message')!r}"
        )


def has_id(value: Any, want: bool, path: str) -> None:
    assert (isinstance(value, str) and value != "") == want, f"{path}: expected present={want}, got {value!r}"


def check_chunks(actual: list[dict[str, Any]], expected: list[dict[str, Any]]) -> None:
    assert len(actual) == len(expected), (
        f"expected {len(expected)} chunk(s), got {len(actual)}:\n  actual: {actual}\n  expected: {expected}"
    )
    for i, (got, want) in enumerate(zip(actual, expected, strict=True)):
        check_keys(f"expectChunks[{i}]", want, CHUNK_KINDS)
        assert len(want) == 1, f"expectChunks[{i}]: a spec chunk has exactly one kind, got {want!r}"
        ((kind, payload),) = want.items()
        assert kind in got, f"chunk[{i}]: expected a {kind} chunk, got {got!r}"
        path = f"chunk[{i}].{kind}"
        if kind == "turnEnd":  # its snapshotId is dynamic: presence, plus finishReason when pinned
            if payload and "finishReason" in payload:
                scalar_eq(got[kind].get("finishReason"), payload["finishReason"], f"{path}.finishReason")
        else:
            match(got[kind], payload, path)


def check_output(out: dict[str, Any], expect: dict[str, Any]) -> None:
    check_keys("expectOutput", expect, OUTPUT_KEYS)
    state = out.get("state")
    if "message" in expect:
        match(out.get("message"), expect["message"], "output.message", subsequence=False)
    if "finishReason" in expect:
        scalar_eq(out.get("finishReason"), expect["finishReason"], "output.finishReason")
    if "hasSnapshotId" in expect:
        has_id(out.get("snapshotId"), expect["hasSnapshotId"], "output.snapshotId")
    if "hasSessionId" in expect:
        has_id((state or {}).get("sessionId"), expect["hasSessionId"], "output.state.sessionId")
    if "stateContains" in expect:
        assert state is not None, f"output.state: expected a state, got none in {out}"
        match(state, expect["stateContains"], "output.state")
    for want in expect.get("artifactsContain") or []:
        found = [a for a in out.get("artifacts") or [] if a.get("name") == want.get("name")]
        assert found, f"output.artifacts: no artifact named {want.get('name')!r} in {out.get('artifacts')!r}"
        match(found[0], want, f"output.artifacts({want.get('name')})")
    if "errorContains" in expect:
        error_match(out.get("error"), expect["errorContains"], "output.error")


def check_snapshot(snap: nba.SessionSnapshot, expect: dict[str, Any]) -> None:
    check_keys("expectSnapshot", expect, SNAPSHOT_KEYS)
    got = snap.to_wire()
    for key in ("parentId", "status", "finishReason"):
        if key in expect:
            scalar_eq(got.get(key), expect[key], f"snapshot.{key}")
    if "hasSessionId" in expect:
        has_id((got.get("state") or {}).get("sessionId"), expect["hasSessionId"], "snapshot.state.sessionId")
    if "stateContains" in expect:
        match(got.get("state"), expect["stateContains"], "snapshot.state")
    if "errorContains" in expect:
        error_match(got.get("error"), expect["errorContains"], "snapshot.error")


# -- steps --------------------------------------------------------------------------------


def program(model: ScriptedModel | None, step: dict[str, Any]) -> None:
    """Program the model for this step only, as Genkit's harnesses do."""
    responses = step.get("modelResponses") or []
    chunks = step.get("streamChunks") or []
    if model is None:
        assert not responses and not chunks, "modelResponses/streamChunks given for an agent with no model"
        return
    assert len(chunks) <= len(responses), "streamChunks for a model call that has no modelResponses entry"
    del model.responses[model.calls :], model.stream_chunks[model.calls :]  # drop unused earlier script
    for i, response in enumerate(responses):
        model.add(response, stream_chunks=chunks[i] if i < len(chunks) else None)


async def run_send(
    agent: nba.Agent, model: ScriptedModel | None, step: dict[str, Any], captures: dict[str, Any]
) -> None:
    program(model, step)
    assert not ("expectError" in step and "expectOutput" in step), "expectError excludes expectOutput"
    init = step.get("init") or {}
    check_keys("init", init, INIT_KEYS)
    for i, raw in enumerate(step.get("inputs") or []):
        check_keys(f"inputs[{i}]", raw, INPUT_KEYS)
    chunks: list[dict[str, Any]] = []

    async def collect(chunk: nba.AgentStreamChunk) -> None:
        chunks.append(chunk.to_wire())

    try:
        with anyio.fail_after(STEP_TIMEOUT):
            inv = agent.start(nba.AgentInit.model_validate(init), on_chunk=collect)
            try:
                for raw in step.get("inputs") or []:
                    inv.send(nba.AgentInput.model_validate(raw))
            finally:
                inv.close()
            output = await inv.output()
    except Exception as exc:
        if "expectError" not in step or isinstance(exc, TimeoutError):
            raise
        thrown = {"status": getattr(exc, "status", None), "message": getattr(exc, "message", str(exc))}
        error_match(thrown, step["expectError"], f"thrown {type(exc).__name__}")
        return
    out = output.to_wire()
    assert "expectError" not in step, f"expected the send to throw {step['expectError']}, got output {out}"
    if "expectChunks" in step:
        check_chunks(chunks, step["expectChunks"])
    if "expectOutput" in step:
        check_output(out, step["expectOutput"])
    capturable = {
        "captureSnapshotId": out.get("snapshotId"),
        "captureState": out.get("state"),
        "captureSessionId": (out.get("state") or {}).get("sessionId"),
    }
    for key, value in capturable.items():
        if key in step:
            assert value, f"{key}: the output has nothing to capture: {out}"
            captures[step[key]] = value


async def run_get_snapshot(agent: nba.Agent, step: dict[str, Any]) -> None:
    snapshot_id, session_id = step.get("snapshotId"), step.get("sessionId")
    assert (snapshot_id is None) != (session_id is None), "getSnapshotData takes one of snapshotId/sessionId"
    snap = await agent.get_snapshot(snapshot_id, session_id=session_id)
    assert snap is not None, f"no snapshot for snapshotId={snapshot_id!r} sessionId={session_id!r}"
    if "expectSnapshot" in step:
        check_snapshot(snap, step["expectSnapshot"])


async def run_abort(agent: nba.Agent, step: dict[str, Any]) -> None:
    previous = await agent.abort(step["snapshotId"])
    if "expectPreviousStatus" in step:  # YAML ~ (None) means "no previous status"
        assert previous == step["expectPreviousStatus"], (
            f"abort: expected previous status {step['expectPreviousStatus']!r}, got {previous!r}"
        )


async def run_wait(agent: nba.Agent, step: dict[str, Any]) -> None:
    snap: nba.SessionSnapshot | None = None
    with anyio.move_on_after(step.get("timeoutMs", 5000) / 1000):
        while snap is None or snap.status not in TERMINAL:
            snap = await agent.get_snapshot(step["snapshotId"])
            if snap is None or snap.status not in TERMINAL:
                await anyio.sleep(0.05)
    assert snap is not None and snap.status in TERMINAL, (
        f"snapshot {step['snapshotId']} did not reach a terminal status; last: {snap and snap.to_wire()}"
    )
    if "expectSnapshot" in step:
        check_snapshot(snap, step["expectSnapshot"])


# -- the test -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
@pytest.mark.parametrize("store_kind", STORE_KINDS)
@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
async def test_conformance(case: dict[str, Any], store_kind: str, tmp_path: Path) -> None:
    """Every case, with the store-backed agents on each kind of store."""
    check_keys("spec", SPEC, TOP_KEYS)
    check_keys(f"case {case.get('name')!r}", case, CASE_KEYS)
    agent, model = build_agent(case["agent"], lambda: make_store(store_kind, tmp_path))
    captures: dict[str, Any] = {}
    for i, raw_step in enumerate(case["steps"]):
        kind = raw_step.get("type")
        try:
            assert kind in STEP_KEYS, f"unknown step type {kind!r}"
            check_keys("step", raw_step, STEP_KEYS[kind])
            # capture* values are names, never templated
            step = {k: v if k.startswith("capture") else resolve(v, captures) for k, v in raw_step.items()}
            if kind == "send":
                await run_send(agent, model, step, captures)
            elif kind == "getSnapshotData":
                await run_get_snapshot(agent, step)
            elif kind == "abort":
                await run_abort(agent, step)
            else:
                await run_wait(agent, step)
        except BaseException as exc:
            exc.add_note(f"in step[{i}] ({kind}) of {case['name']!r}")
            raise
