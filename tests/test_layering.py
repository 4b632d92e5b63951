"""The package's layers: no import cycles at run time, and dependencies that point down.

Imports are read from the source (every ``import`` statement, function-level
ones included; only ``if TYPE_CHECKING:`` blocks are left out, since they never
run), so a lazy import that closes a cycle is caught too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import nb_agents

ROOT = Path(nb_agents.__file__).resolve().parent


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in ROOT.rglob("*.py")}


def _type_checking_block(node: ast.AST) -> bool:
    if not isinstance(node, ast.If):
        return False
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _runtime_imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if _type_checking_block(node):
            assert isinstance(node, ast.If)
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def _resolve(module: str, is_package: bool, node: ast.Import | ast.ImportFrom) -> set[str]:
    """The nb_agents modules an import statement loads (the package's own __init__ aside)."""
    targets: set[str] = set()
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        if node.level:
            base = module.split(".") if is_package else module.split(".")[:-1]
            base = base[: len(base) - (node.level - 1)]
            prefix = ".".join([*base, node.module] if node.module else base)
        else:
            prefix = node.module or ""
        names = [prefix] + [f"{prefix}.{a.name}" for a in node.names]
    for name in names:
        if name in MODULES:
            targets.add(name)
    return targets


def import_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text(), str(path))
        deps: set[str] = set()
        for node in _runtime_imports(tree):
            deps |= _resolve(name, path.name == "__init__.py", node)
        # importing a submodule runs its parents' __init__ first: that is not a dependency to check
        graph[name] = {d for d in deps if d != name and not name.startswith(d + ".")}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return found


GRAPH = import_graph()


def reaches(start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for dep in GRAPH.get(todo.pop(), ()):
            if dep not in seen:
                seen.add(dep)
                todo.append(dep)
    return seen


def test_the_graph_sees_imports() -> None:
    # a probe of the reader itself: these edges exist in the source
    assert "nb_agents._engine.invocation" in GRAPH["nb_agents.agent"] | reaches("nb_agents.agent")
    assert "nb_agents.types" in GRAPH["nb_agents.chat"]
    assert "nb_agents.errors" in GRAPH["nb_agents.types"]


def test_there_are_no_import_cycles_at_run_time() -> None:
    assert cycles(GRAPH) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


TOP = ("nb_agents.notebook", "nb_agents.server", "nb_agents.remote", "nb_agents.mcp")
CORE = [m for m in MODULES if not m.startswith(TOP) and m not in ("nb_agents", "nb_agents.__main__")]


@pytest.mark.parametrize("module", sorted(CORE))
def test_the_core_never_imports_the_notebook_the_server_or_the_client(module: str) -> None:
    assert sorted(d for d in reaches(module) if d.startswith(TOP)) == []


FACADES = (
    "nb_agents.agent",
    "nb_agents.chat",
    "nb_agents.connection",
    "nb_agents.protocol",
    "nb_agents.listings",
    "nb_agents.responses",
    "nb_agents.render",
)


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("nb_agents._engine")))
def test_the_engine_never_reaches_the_facades(module: str) -> None:
    assert sorted(reaches(module) & set(FACADES)) == []


def test_the_remote_client_sits_on_the_chat_seam_not_on_the_local_agent() -> None:
    deps = reaches("nb_agents.remote")
    assert "nb_agents.agent" not in deps
    assert not any(d.startswith("nb_agents._engine") for d in deps)
    assert "nb_agents.protocol" in GRAPH["nb_agents.remote"]


def test_the_wire_types_import_no_renderer() -> None:
    assert "nb_agents.render" not in reaches("nb_agents.types")
    assert "nb_agents.render" not in reaches("nb_agents.responses")


# -- the house's shape (issue 22) ---------------------------------------------------------------
MAX_MODULE_LINES = 400


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_is_over_400_lines(module: str) -> None:
    lines = MODULES[module].read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_MODULE_LINES, f"{module} has {lines} lines; split it by concept"


def probes(source: str) -> list[str]:
    """``hasattr``/``getattr`` calls on an agent, or on an exception for its ``status``, in `source`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        if node.func.id not in ("hasattr", "getattr") or len(node.args) < 2:
            continue
        target, name = ast.unparse(node.args[0]), node.args[1]
        asks_status = isinstance(name, ast.Constant) and name.value == "status"
        if "agent" in target.lower() or (asks_status and target in ("exc", "err", "error", "e")):
            found.append(ast.unparse(node))
    return found


def test_no_caller_probes_an_agent_or_an_error() -> None:
    """The agent verbs are declared on `BaseAgent` and errors are `NbAgentsError`s: callers never probe."""
    found = {m: p for m, path in MODULES.items() if (p := probes(path.read_text(encoding="utf-8")))}
    assert found == {}


def test_the_probe_finder_finds_probes() -> None:
    source = (
        "hasattr(agent, 'fork')\ngetattr(self.agent, 'rules', None)\nhasattr(exc, 'status')\nhasattr(x, 'y')"
    )
    assert probes(source) == [
        "hasattr(agent, 'fork')",
        "getattr(self.agent, 'rules', None)",
        "hasattr(exc, 'status')",
    ]
