"""The public surface: __all__, the names DESIGN.md promises, sync twins, light imports."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys

import pytest

import nb_agents
import nb_agents as nba

WIRE_TYPES = [
    "Part",
    "Message",
    "ToolRequest",
    "ToolResponse",
    "AgentInput",
    "AgentInit",
    "AgentOutput",
    "AgentStreamChunk",
    "TurnEnd",
    "SessionState",
    "SessionSnapshot",
    "Artifact",
    "ToolResume",
    "FinishReason",
    "SnapshotStatus",
]

DESIGN_NAMES = [
    "define_agent",
    "define_custom_agent",
    "define_interrupt",
    "tool",
    "resumable_tool",
    "Interrupt",
    "ToolFail",
    "ToolContext",
    "TurnContext",
    "InMemorySessionStore",
    "AgentInput",
    "ToolResume",
    "interrupt_as",
    "middleware",
    "Agent",
    "Message",
    "Model",
    "AgentError",
    *WIRE_TYPES,
]

# Used by DESIGN.md's public API block but not built yet.
DESIGN_NAMES_PLANNED = ["SqliteSessionStore", "remote_agent"]


def test_all_is_sorted_and_resolves() -> None:
    names = list(nb_agents.__all__)
    assert names == sorted(names)
    assert len(names) == len(set(names))
    missing = [n for n in names if not hasattr(nb_agents, n)]
    assert missing == []


def test_design_names_exist_at_top_level() -> None:
    missing = [n for n in DESIGN_NAMES if not hasattr(nba, n)]
    assert missing == []
    not_exported = [n for n in DESIGN_NAMES if n not in nba.__all__]
    assert not_exported == []


def test_planned_design_names_exist_at_top_level() -> None:
    assert [n for n in DESIGN_NAMES_PLANNED if not hasattr(nba, n)] == []


def test_middleware_namespace() -> None:
    assert nba.middleware.ToolApproval is not None
    assert issubclass(nba.middleware.ToolApproval, nba.middleware.Middleware)


def test_agent_is_the_define_agent_type() -> None:
    from nb_agents.testing import ScriptedModel

    agent = nba.define_agent("x", model=ScriptedModel([]))
    assert isinstance(agent, nba.Agent)
    assert callable(agent.chat) and callable(agent.run) and callable(agent.run_text)


def _public_async_methods(cls: type) -> list[str]:
    return [
        name
        for name, member in inspect.getmembers(cls)
        if not name.startswith("_") and inspect.iscoroutinefunction(member)
    ]


@pytest.mark.parametrize("cls", [nba.Agent, nba.Chat, nba.DetachedTask], ids=lambda c: c.__name__)
def test_every_async_verb_has_a_sync_twin(cls: type) -> None:
    verbs = _public_async_methods(cls)
    assert verbs, f"{cls.__name__} has no public async methods?"
    missing = [v for v in verbs if not callable(getattr(cls, f"{v}_sync", None))]
    assert missing == []
    # the twins are plain functions, not coroutines
    assert not any(inspect.iscoroutinefunction(getattr(cls, f"{v}_sync")) for v in verbs)


@pytest.mark.parametrize(
    ("cls", "expected"),
    [
        (nba.Agent, {"run", "run_text", "get_snapshot", "abort", "pending"}),
        (nba.Chat, {"send", "resume", "detach", "abort"}),
        (nba.DetachedTask, {"poll", "wait", "abort"}),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_expected_async_verbs_exist(cls: type, expected: set[str]) -> None:
    assert expected <= set(_public_async_methods(cls))


def test_streaming_verbs_have_sync_twins() -> None:
    for name in ("send_stream", "resume_stream"):
        assert callable(getattr(nba.Chat, f"{name}_sync", None))


HEAVY = ("ipywidgets", "starlette", "uvicorn", "psycopg")


def _heavy_modules_after(statements: str) -> list[str]:
    """Run `statements` in a fresh interpreter; which heavy modules got imported."""
    code = (
        f"import sys, json\n{statements}\n"
        f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r})))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_import_is_light() -> None:
    assert _heavy_modules_after("import nb_agents") == []


def test_import_builds_no_pydantic_model() -> None:
    # building a model's validator loads pydantic's plugins (through importlib.metadata, ~20 ms):
    # wire models are built on first use (`defer_build`), and so is every model of the package
    code = "import sys, nb_agents; print('pydantic.plugin._loader' in sys.modules)"
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert proc.stdout.strip() == "False"
    # the probe sees a model built
    code = "import sys, nb_agents; nb_agents.Part(text='x'); print('pydantic.plugin._loader' in sys.modules)"
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert proc.stdout.strip() == "True"


def test_import_probe_sees_heavy_modules() -> None:
    pytest.importorskip("ipywidgets")
    assert "ipywidgets" in _heavy_modules_after("import nb_agents, ipywidgets")


def test_all_is_exactly_the_public_namespace() -> None:
    """Every public name of the package is in ``__all__``, and nothing else is (submodules aside)."""
    import types

    public = {
        name
        for name, value in vars(nb_agents).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    public |= set(nb_agents._LAZY)  # the names imported on first use
    public.add("middleware")  # the one submodule the design exposes as a name (nba.middleware.ToolApproval)
    public.add("notify")  # and nba.notify.webhook (DESIGN.md, the next capabilities)
    public.discard("TYPE_CHECKING")
    public.discard("Any")
    public.add("__version__")
    assert sorted(public ^ set(nb_agents.__all__)) == []
