"""What a form records (`Answer`), and what a tool's schemas say about the answer.

An answer is *approval-shaped* when its schema is an object whose one
required field is the bool ``approved``: the form asks Approve / Deny and
shows the other (optional) fields, and a single optional text field among
them becomes the reason beside Deny.
"""

from __future__ import annotations

from typing import Any, Literal, NamedTuple

from ..types import Part

__all__ = ["Answer", "approval_extras", "is_approval_shaped", "one_text"]


class Answer(NamedTuple):
    """A recorded answer: which list the part goes in, the part, a label, and in words what it did."""

    kind: Literal["respond", "restart"]
    part: Part
    label: str
    verb: str = "answered"  # "approved", "denied" or "answered"
    changed: tuple[tuple[str, Any, Any], ...] = ()


def is_approval_shaped(schema: Any) -> bool:
    """True for an object schema whose only required field is the bool ``approved``.

    Example:
        >>> is_approval_shaped({"type": "object", "required": ["approved"],
        ...     "properties": {"approved": {"type": "boolean"}, "note": {"type": "string"}}})
        True
    """
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return False
    props = schema.get("properties") or {}
    return schema.get("required") == ["approved"] and props.get("approved", {}).get("type") == "boolean"


def approval_extras(schema: dict[str, Any]) -> dict[str, Any]:
    """The approval-shaped schema without ``approved``: the optional fields."""
    props = {k: v for k, v in schema.get("properties", {}).items() if k != "approved"}
    return {**schema, "properties": props, "required": []}


def one_text(schema: dict[str, Any]) -> str | None:
    """The name of the one optional text field of an approval's extras (it becomes the reason)."""
    props = schema.get("properties") or {}
    if len(props) != 1:
        return None
    name, prop = next(iter(props.items()))
    kinds = [prop.get("type")] + [o.get("type") for o in prop.get("anyOf", []) if isinstance(o, dict)]
    return name if "string" in kinds and not prop.get("enum") else None
