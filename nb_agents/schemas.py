"""Tool schemas from Python signatures.

A function with one pydantic-model parameter takes that model as its input;
otherwise its parameters become the fields of a generated input model. String
annotations (``from __future__ import annotations``) naming classes local to
the decorating scope resolve through that scope's names.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from typing import Any, get_type_hints

from pydantic import BaseModel, create_model

__all__ = ["camel", "caller_locals", "is_model", "signature_model", "type_hints"]


def is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def caller_locals(depth: int = 2) -> dict[str, Any]:
    """The local names where a decorator was applied, to resolve string hints
    (``from __future__ import annotations``) naming local classes."""
    frame = sys._getframe(depth)
    return dict(frame.f_locals)


def type_hints(fn: Callable[..., Any], localns: dict[str, Any]) -> dict[str, Any]:
    return get_type_hints(fn, localns=localns, include_extras=True)


def signature_model(
    fn: Callable[..., Any], name: str, skip: set[str], localns: dict[str, Any], ctx_type: type
) -> tuple[type[BaseModel], bool, str | None, dict[str, Any]]:
    """Build the input model of `fn` from its type hints.

    A parameter annotated `ctx_type` (or named ``ctx``) is the context, not input.
    Returns (input model, unpack?, ctx param name, hints).
    """
    found = type_hints(fn, localns)
    sig = inspect.signature(fn)
    ctx_param = None
    fields: dict[str, Any] = {}
    for pname, param in sig.parameters.items():
        ann = found.get(pname, Any)
        if ann is ctx_type or pname == "ctx":
            ctx_param = pname
            continue
        if pname in skip:
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"tool '{name}': *args/**kwargs parameters are not supported")
        default = ... if param.default is param.empty else param.default
        fields[pname] = (ann, default)
    if len(fields) == 1:
        ((_, (only_ann, _)),) = fields.items()
        if is_model(only_ann):
            return only_ann, False, ctx_param, found
    model = create_model(f"{camel(name)}Input", **fields)  # type: ignore[call-overload]
    return model, True, ctx_param, found


def camel(name: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in name.replace("-", "_").split("_"))
