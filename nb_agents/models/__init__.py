"""Models: the `Model` protocol and name resolution (``provider/model``)."""

from .base import Model, ModelChunkSink, register_provider, resolve_model

__all__ = ["Model", "ModelChunkSink", "register_provider", "resolve_model"]
