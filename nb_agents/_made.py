"""`made`: a pydantic model from values already of its fields' types, without validating them again.

The engine builds its rows, states and outputs from objects it made itself (each
already a `Message`, a `SessionState`, a finish reason it chose): validating them
again costs a turn a few microseconds per model and checks nothing. `made` sets
a model's slots as pydantic sets a validated one's, so the result is the same
model (fields, fields set, extra, private attributes: `tests/test_types.py`
compares them). What comes from a caller, a model or a store is validated where
it comes in, never built here.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

__all__ = ["made"]


def made(cls: type[_W], values: dict[str, Any], *, like: _W | None = None, **private: Any) -> _W:
    """A `cls` holding `values`, each already of its field's type (objects the engine built): set
    as pydantic sets a validated model's slots, without validating them again (a third of the
    cost). Fields not given take their defaults; the ones given are the fields set; `private`
    sets private attributes over their defaults. With `like` (a `cls`), a copy of it with the
    fields `values` over its own: ``like.model_copy(update=values)`` without its per-slot copies."""
    if like is not None:
        model = _new(cls)
        _set(model, "__dict__", {**like.__dict__, **values})
        _set(model, "__pydantic_fields_set__", {*like.__pydantic_fields_set__, *values})
        extra, own = like.__pydantic_extra__, like.__pydantic_private__
        _set(model, "__pydantic_extra__", None if extra is None else dict(extra))
        _set(model, "__pydantic_private__", None if own is None else {**own, **private})
        return model
    shape = _SHAPES.get(cls) or _shape(cls)
    defaults, fresh, required, extra_kept, kept = shape
    if not required.issubset(values):
        raise TypeError(f"{cls.__name__} needs {', '.join(sorted(required.difference(values)))}")
    fields = {**defaults, **values}
    for name, factory in fresh:
        if name not in values:
            fields[name] = factory()  # type: ignore[call-arg]
    model = _new(cls)
    _set(model, "__dict__", fields)
    _set(model, "__pydantic_fields_set__", set(values))
    _set(model, "__pydantic_extra__", {} if extra_kept else None)
    _set(model, "__pydantic_private__", None if kept is None else {**kept, **private})
    return model


def _shape(cls: type[BaseModel]) -> Any:
    """What `made` needs of `cls`, once: its fields' defaults in their order, the fields whose
    defaults a factory makes fresh, the required ones, whether it keeps extra fields, and its
    private attributes' defaults (a factory there is not supported: refused here)."""
    fields = cls.model_fields
    defaults = {name: f.default for name, f in fields.items()}
    fresh = tuple((name, f.default_factory) for name, f in fields.items() if f.default_factory)
    required = frozenset(name for name, f in fields.items() if f.is_required())
    private = cls.__private_attributes__
    if any(a.default_factory is not None for a in private.values()):
        raise TypeError(f"made() cannot default {cls.__name__}'s private attributes made by a factory")
    kept = {name: a.default for name, a in private.items()} or None
    shape = _SHAPES[cls] = (defaults, fresh, required, cls.model_config.get("extra") == "allow", kept)
    return shape


_W = TypeVar("_W", bound=BaseModel)
_SHAPES: dict[type[BaseModel], Any] = {}
_new, _set = object.__new__, object.__setattr__
