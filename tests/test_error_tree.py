"""One error root: every exception class of the package derives from `NbAgentsError`.

Every module of the package is imported and every exception class it defined
collected (also those only reachable as subclasses, or kept private); each must
derive from `NbAgentsError`, except the two control-flow signals a tool raises.
Before, five sat outside (`PreTurnFailureError`, `FieldError`, `CliError`,
`ClientStalledError`, `ClaimRacedError`, and the SQLite store's busy signals), so
``except nba.NbAgentsError`` missed them. The tree in `nb_agents.errors` names
every one a module exports (the internal signals below the drawing).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import nb_agents
import nb_agents.errors
from nb_agents.errors import NbAgentsError

SIGNALS = {"nb_agents.interrupts.signal.Interrupt", "nb_agents.tools.base.ToolFail"}
"""Control-flow signals, not errors (STYLE.md): the only exceptions outside the tree."""


def package_exceptions() -> dict[str, type[BaseException]]:
    importlib.import_module("nb_agents.testing.stores")  # first: it has pytest rewrite its check modules
    for module in pkgutil.walk_packages(nb_agents.__path__, "nb_agents."):
        importlib.import_module(module.name)  # an extra that is not installed fails the test: CI has all
    found: dict[str, type[BaseException]] = {}
    todo: list[type[BaseException]] = [BaseException]
    while todo:
        cls = todo.pop()
        for sub in cls.__subclasses__():
            if sub.__module__.split(".")[0] == "nb_agents":
                found[f"{sub.__module__}.{sub.__qualname__}"] = sub
            todo.append(sub)
    return found


def test_every_exception_class_of_the_package_is_an_nb_agents_error() -> None:
    found = package_exceptions()
    assert SIGNALS <= set(found)  # the walk sees the whole package
    outside = sorted(name for name, cls in found.items() if not issubclass(cls, NbAgentsError))
    assert outside == sorted(SIGNALS)


def test_every_error_carries_a_status_and_a_message() -> None:
    for name, cls in package_exceptions().items():
        if name in SIGNALS or inspect.isabstract(cls):
            continue
        assert isinstance(cls.status, str) and cls.status.isupper(), name


def test_the_tree_in_errors_py_names_every_public_error() -> None:
    drawn = nb_agents.errors.__doc__ or ""
    public = {
        cls.__name__
        for name, cls in package_exceptions().items()
        if name not in SIGNALS
        and cls is not NbAgentsError
        and cls.__name__ in getattr(importlib.import_module(cls.__module__), "__all__", ())
    }
    assert {"CliError", "FieldError", "MCPError", "MCPCallLostError", "ModelError"} <= public
    # drawn in the tree, or named among the internal signals below it
    missing = sorted(n for n in public if f"── {n} " not in drawn and f"`{n}`" not in drawn)
    assert missing == []
