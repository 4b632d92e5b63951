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
    shape = _SHAPES.get(cls)
    if shape is None:  # once per class: its defaults in field order, and the fields made fresh
        defaults = {name: f.default for name, f in cls.model_fields.items()}
        fresh = tuple((n, f.default_factory) for n, f in cls.model_fields.items() if f.default_factory)
        kept = {n: a.default for n, a in cls.__private_attributes__.items()} or None
        shape = _SHAPES[cls] = (defaults, fresh, kept)
    defaults, fresh, kept = shape
    fields = {**defaults, **values}
    for name, factory in fresh:
        if name not in values:
            fields[name] = factory()  # type: ignore[call-arg]
    model = _new(cls)
    _set(model, "__dict__", fields)
    _set(model, "__pydantic_fields_set__", set(values))
    _set(model, "__pydantic_extra__", {})
    _set(model, "__pydantic_private__", None if kept is None else {**kept, **private})
    return model


_W = TypeVar("_W", bound=BaseModel)
_SHAPES: dict[type[BaseModel], Any] = {}
_new, _set = object.__new__, object.__setattr__
