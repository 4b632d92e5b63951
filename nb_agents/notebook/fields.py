"""Form fields generated from JSON schemas (what pydantic's ``model_json_schema`` emits).

`schema_field` turns a schema into a `Field`: a widget plus ``get()``, the
JSON value the widget holds. It understands ``$defs``/``$ref``, ``anyOf``
with ``null`` (Optional), ``enum``/``const`` (Literal, Enum; ``enumNames`` label the
values), number bounds
(shown next to the label), nested objects and arrays of primitives. Anything
else (unions, maps, arrays of objects, recursive models) falls back to a JSON
text area, so every schema gets a form. Labels come from the schema's titles,
else the field name in words ("toAccount" -> "To account"), and each field's
``description`` shows beside it as a hint; a required field is marked ``*``
and an empty one is refused with the message beside it (`Field.error`).
Schema text is data: labels are set with `nb_agents.notebook.controls.labelled`
and HTML is escaped with `nb_agents.render._html.esc`. Beyond that, fields
do not validate against the schema: the tool's pydantic adapters do, in
`nb_agents.notebook.forms`, which puts each error next to its field
(`Field.find` locates a field by the error's path).
"""

from __future__ import annotations

import json
from typing import Any

import ipywidgets as widgets

from ..render import label_for
from ..render._html import NO_TYPESET, esc
from .controls import labelled
from .widget_field import MISSING, Field, FieldError, hint_html

__all__ = ["MISSING", "Field", "FieldError", "resolve", "schema_field"]

_STYLE = {"description_width": "initial"}
_MAX_DEPTH = 6


def _hint(schema: dict[str, Any]) -> str:
    note = schema.get("description")
    return note.strip() if isinstance(note, str) else ""


def resolve(schema: Any, defs: dict[str, Any]) -> dict[str, Any]:
    """Follow ``$ref`` (and single-item ``allOf``), keeping the outer title,
    description and default."""
    if not isinstance(schema, dict):
        return {}
    out = dict(schema)
    for _ in range(_MAX_DEPTH):
        if "$ref" in out:
            target = defs.get(str(out.pop("$ref")).rsplit("/", 1)[-1], {})
        elif isinstance(out.get("allOf"), list) and len(out["allOf"]) == 1:
            target = out.pop("allOf")[0]
        else:
            return out
        out = {**target, **out} if isinstance(target, dict) else out
    return out


def _nullable(schema: dict[str, Any], defs: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """The schema without its ``null`` branch, and whether it had one."""
    options = schema.get("anyOf")
    if isinstance(options, list):
        rest = [o for o in options if o != {"type": "null"}]
        if len(rest) == 1 and len(rest) < len(options):
            outer = {k: v for k, v in schema.items() if k != "anyOf"}
            return {**resolve(rest[0], defs), **outer}, True
    kind = schema.get("type")
    if isinstance(kind, list) and "null" in kind:
        rest_types = [t for t in kind if t != "null"]
        if len(rest_types) == 1:
            return {**schema, "type": rest_types[0]}, True
    enum = schema.get("enum")
    if isinstance(enum, list) and None in enum:
        return {**schema, "enum": [e for e in enum if e is not None]}, True
    return schema, False


def _bounds(schema: dict[str, Any]) -> str:
    """Number bounds as a label suffix, e.g. `` (> 0, ≤ 1000)``."""
    marks = (("exclusiveMinimum", ">"), ("minimum", "≥"), ("exclusiveMaximum", "<"), ("maximum", "≤"))
    found = [f"{op} {schema[key]}" for key, op in marks if key in schema]
    return f" ({', '.join(found)})" if found else ""


def _initial(schema: dict[str, Any], value: Any) -> Any:
    if value is not MISSING:
        return value
    return schema.get("default", MISSING)


def _dump(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def schema_field(
    schema: Any,
    value: Any = MISSING,
    *,
    label: str = "",
    defs: dict[str, Any] | None = None,
    required: bool = True,
    depth: int = 0,
) -> Field:
    """A `Field` for `schema`, showing `value` (else the schema default).

    Args:
        schema: A JSON schema; ``$defs`` at its root are used for ``$ref``.
        value: The starting value (e.g. the input to edit).
        label: The label shown before the widget.
        defs: Definitions for ``$ref`` (taken from ``schema["$defs"]`` at the root).
        required: Whether the value must be given (an empty optional field is None).
        depth: Nesting depth, to stop at recursive models.

    Example:
        >>> f = schema_field({"type": "object", "properties": {"note": {"type": "string"}}})
        >>> f.get()
        {'note': ''}
    """
    if defs is None:
        defs = dict(schema.get("$defs", {})) if isinstance(schema, dict) else {}
    resolved = resolve(schema, defs)
    inner, nullable = _nullable(resolved, defs)
    if depth > _MAX_DEPTH:
        return _json_field(resolved, value, label, required)
    if "const" in inner:
        return _const_field(inner, label)
    if isinstance(inner.get("enum"), list) and inner["enum"]:
        return _enum_field(inner, value, label, nullable or not required)
    kind = inner.get("type")
    if kind == "string":
        return _text_field(inner, value, label, nullable or not required)
    if kind == "boolean" and not nullable:
        start = _initial(inner, value)
        box = labelled(
            widgets.Checkbox(value=bool(start) if start is not MISSING else False, indent=False), label
        )
        return Field(box, lambda: bool(box.value), [box], hint=_hint(inner))
    if kind == "boolean":
        return _enum_field({**inner, "enum": [True, False]}, value, label, True)
    if kind in ("integer", "number"):
        field = _number_field(inner, value, label, kind)
        return _optional(field, value, inner) if nullable or not required else field
    if kind == "array":
        tags = _array_field(inner, value, label, defs)
        if tags is not None:
            return tags
    if kind == "object" and isinstance(inner.get("properties"), dict):
        field = _object_field(inner, value, label, defs, depth)
        return _optional(field, value, inner) if nullable or not required else field
    return _json_field(resolved, value, label, required and not nullable)


def _const_field(schema: dict[str, Any], label: str) -> Field:
    const = schema["const"]
    shown = f'<span class="{NO_TYPESET}">{esc(label)}: <code>{esc(_dump(const))}</code></span>'
    return Field(widgets.HTML(value=shown if label else ""), lambda: const, [], hint=_hint(schema))


def _enum_field(schema: dict[str, Any], value: Any, label: str, optional: bool) -> Field:
    choices = list(schema["enum"])
    names = schema.get("enumNames")  # titles for the values (MCP elicitation schemas carry them)
    labels = [str(n) for n in names] if isinstance(names, list) and len(names) == len(choices) else None
    options: list[tuple[str, Any]] = [(labels[i] if labels else _dump(c), c) for i, c in enumerate(choices)]
    if optional:
        options.insert(0, ("—", None))
    start = _initial(schema, value)
    if start is MISSING or start not in [v for _, v in options]:
        start = options[0][1]
    drop = labelled(widgets.Dropdown(options=options, value=start, style=_STYLE), label)
    return Field(drop, lambda: drop.value, [drop], hint=_hint(schema))


def _text_field(schema: dict[str, Any], value: Any, label: str, optional: bool) -> Field:
    start = _initial(schema, value)
    long = int(schema.get("maxLength") or 0) > 200 or schema.get("format") == "textarea"
    maker = widgets.Textarea if long else widgets.Text
    text = labelled(maker(value="" if start is MISSING or start is None else str(start), style=_STYLE), label)
    if long or maker is widgets.Text:
        text.layout.width = "28em" if maker is widgets.Text else "100%"

    def get() -> Any:
        if optional:
            return text.value or None
        if not text.value.strip():
            name = label.rstrip(" *") or "answer"
            raise FieldError(f"{name}: required, enter a value", short="required")
        return text.value

    return Field(text, get, [text], hint=_hint(schema))


def _number_field(schema: dict[str, Any], value: Any, label: str, kind: str) -> Field:
    start = _initial(schema, value)
    maker = widgets.IntText if kind == "integer" else widgets.FloatText
    box = labelled(maker(style=_STYLE), label + _bounds(schema))
    if isinstance(start, int | float) and not isinstance(start, bool):
        box.value = start
    return Field(box, lambda: box.value, [box], hint=_hint(schema))


def _optional(field: Field, value: Any, schema: dict[str, Any]) -> Field:
    """A checkbox that says whether the optional value is given at all."""
    start = _initial(schema, value)
    given = widgets.Checkbox(value=start is not MISSING and start is not None, description="", indent=False)
    given.layout.width = "2em"
    given.tooltip = "give a value"

    def get() -> Any:
        return field.get() if given.value else None

    return Field(
        widgets.HBox([given, field.widget]),
        get,
        [given, *field.controls],
        children=field.children,
        hint=field.hint,
    )


def _array_field(schema: dict[str, Any], value: Any, label: str, defs: dict[str, Any]) -> Field | None:
    items, _ = _nullable(resolve(schema.get("items", {}), defs), defs)
    makers = {"string": widgets.TagsInput, "integer": widgets.IntsInput, "number": widgets.FloatsInput}
    maker = makers.get(str(items.get("type")))
    if maker is None or "const" in items:
        return None
    start = _initial(schema, value)
    tags = maker(value=list(start) if isinstance(start, list) else [], allow_duplicates=True)
    if isinstance(items.get("enum"), list) and maker is widgets.TagsInput:
        tags.allowed_tags = [str(e) for e in items["enum"]]
    name = widgets.HTML(value=f'<span class="{NO_TYPESET}">{esc(label)}</span>')
    row = widgets.HBox([name, tags]) if label else tags
    return Field(row, lambda: list(tags.value), [tags], hint=_hint(schema))


def _object_field(schema: dict[str, Any], value: Any, label: str, defs: dict[str, Any], depth: int) -> Field:
    start = _initial(schema, value)
    given = start if isinstance(start, dict) else {}
    required = set(schema.get("required", []))
    fields: dict[str, tuple[Field, bool]] = {}
    for name, prop in schema["properties"].items():
        needed = name in required
        fields[name] = (
            schema_field(
                prop,
                given.get(name, MISSING),
                label=label_for(name, prop) + (" *" if needed and _marks(prop, defs) else ""),
                defs=defs,
                required=needed,
                depth=depth + 1,
            ),
            needed,
        )

    def get() -> Any:
        out: dict[str, Any] = {}
        for name, (field, needed) in fields.items():
            got = field.get()
            if got is not None or needed:
                out[name] = got
        return out

    children = [f.row for f, _ in fields.values()]
    if label:
        note = hint_html(_hint(schema)) if _hint(schema) else ""
        children.insert(0, widgets.HTML(value=f'<b class="{NO_TYPESET}">{esc(label)}</b>{note}'))
    box = widgets.VBox(children)
    if depth:
        box.layout.margin = "0 0 0 1.5em"
    controls = [c for f, _ in fields.values() for c in f.controls]
    return Field(box, get, controls, children={name: f for name, (f, _) in fields.items()})


def _marks(prop: Any, defs: dict[str, Any]) -> bool:
    """Whether a required property can be left empty in its widget (and so needs the ``*``)."""
    inner, nullable = _nullable(resolve(prop, defs), defs)
    return not nullable and "const" not in inner and inner.get("type") != "boolean"


def _json_field(schema: dict[str, Any], value: Any, label: str, required: bool) -> Field:
    start = _initial(schema, value)
    area = labelled(
        widgets.Textarea(
            value="" if start is MISSING else json.dumps(start, indent=2, ensure_ascii=False),
            placeholder="a JSON value",
            style=_STYLE,
        ),
        f"{label} (JSON)" if label else "JSON",
    )
    area.layout.width = "100%"

    def get() -> Any:
        text = area.value.strip()
        if not text:
            if required:
                raise FieldError(f"{label or 'value'}: enter a JSON value", short="enter a JSON value")
            return None
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise FieldError(
                f"{label or 'value'}: not valid JSON ({exc.msg}, line {exc.lineno})", short="not valid JSON"
            ) from exc

    return Field(area, get, [area], hint=_hint(schema))
