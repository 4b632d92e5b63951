"""Form fields from pydantic JSON schemas: which widget, what value comes back."""

from __future__ import annotations

import enum
from typing import Any, Literal

import ipywidgets as widgets
import pytest
from pydantic import BaseModel, Field, TypeAdapter

from nb_agents.notebook.fields import FieldError, schema_field


class Color(enum.Enum):
    red = "red"
    blue = "blue"


class Address(BaseModel):
    street: str
    zip: str | None = None


class Order(BaseModel):
    amount: float = Field(gt=0, le=1000, description="How much")
    count: int = Field(default=3, ge=1)
    rush: bool = False
    mode: Literal["fast", "slow"] = "fast"
    kind: Literal["order"]
    color: Color = Color.red
    tags: list[str] = []
    sizes: list[int]
    ship_to: Address
    bill_to: Address | None = None
    note: str | None = None
    limit: int | None = None
    mixed: int | str = 1
    extra: dict[str, int] = {}


class Tree(BaseModel):
    name: str
    children: list[Tree] = []


def widgets_of(root: Any) -> list[Any]:
    out = [root]
    for child in getattr(root, "children", ()):
        out += widgets_of(child)
    return out


def controls(field: Any) -> dict[str, Any]:
    """The labelled controls of a form by label (before any bounds); the first of a name wins."""
    found: dict[str, Any] = {}
    for w in widgets_of(field.widget):
        label = getattr(w, "description", "")
        if label and not isinstance(w, widgets.Button):
            found.setdefault(label.split(" (")[0].removesuffix(" *"), w)
    return found


def test_a_model_schema_becomes_typed_widgets() -> None:
    field = schema_field(Order.model_json_schema())
    c = controls(field)
    assert isinstance(c["Amount"], widgets.FloatText) and "> 0" in c["Amount"].description
    assert "≤ 1000" in c["Amount"].description
    assert isinstance(c["Count"], widgets.IntText) and c["Count"].value == 3
    assert isinstance(c["Rush"], widgets.Checkbox)
    assert isinstance(c["Mode"], widgets.Dropdown) and "fast" in [v for _, v in c["Mode"].options]
    assert isinstance(c["Color"], widgets.Dropdown) and c["Color"].value == "red"  # an Enum via $ref
    assert isinstance(c["Street"], widgets.Text)  # a nested model via $ref
    assert isinstance(c["Mixed"], widgets.Textarea) and "(JSON)" in c["Mixed"].description  # a union
    assert isinstance(c["Extra"], widgets.Textarea)  # so does a map
    tags = [w for w in widgets_of(field.widget) if type(w) is widgets.TagsInput]
    ints = [w for w in widgets_of(field.widget) if type(w) is widgets.IntsInput]
    assert len(tags) == 1 and len(ints) == 1


def test_values_come_back_as_json_that_validates() -> None:
    field = schema_field(Order.model_json_schema())
    c = controls(field)
    c["Amount"].value = 250.5
    c["Street"].value = "1 Main St"
    ints = next(w for w in widgets_of(field.widget) if isinstance(w, widgets.IntsInput))
    ints.value = [1, 2]
    value = field.get()
    assert value["kind"] == "order"  # a const is filled in
    assert value["amount"] == 250.5 and value["sizes"] == [1, 2]
    assert value["ship_to"] == {"street": "1 Main St"}  # the empty optional zip is left out
    assert "bill_to" not in value and "note" not in value and "limit" not in value  # optional, not given
    assert value["count"] == 3 and value["mode"] == "fast" and value["color"] == "red"
    order = Order.model_validate(value)
    assert order.amount == 250.5 and order.ship_to.street == "1 Main St"


def test_starting_values_fill_the_form() -> None:
    start = {
        "amount": 9.0,
        "kind": "order",
        "sizes": [3],
        "ship_to": {"street": "A", "zip": "123"},
        "bill_to": {"street": "B"},
        "note": "hi",
        "limit": 7,
        "mixed": "x",
        "tags": ["a", "b"],
    }
    field = schema_field(Order.model_json_schema(), start)
    value = field.get()
    assert value["bill_to"] == {"street": "B"} and value["ship_to"] == {"street": "A", "zip": "123"}
    assert value["note"] == "hi" and value["limit"] == 7 and value["mixed"] == "x"
    assert value["tags"] == ["a", "b"]
    assert Order.model_validate(value).bill_to == Address(street="B")


def test_optional_values_can_be_switched_off() -> None:
    field = schema_field(
        Order.model_json_schema(), {"limit": 7, "kind": "order", "sizes": [], "ship_to": {"street": "A"}}
    )
    boxes = [w for w in widgets_of(field.widget) if isinstance(w, widgets.Checkbox) and w.description == ""]
    assert len(boxes) == 3  # count, bill_to and limit say whether they are given
    for box in boxes:
        box.value = False
    value = field.get()
    assert "limit" not in value and "count" not in value and "bill_to" not in value


@pytest.mark.parametrize(
    ("tp", "start", "widget", "expected"),
    [
        (str, "hello", widgets.Text, "hello"),
        (int, 4, widgets.IntText, 4),
        (float, 2.5, widgets.FloatText, 2.5),
        (bool, True, widgets.Checkbox, True),
        (Literal["a", "b"], "b", widgets.Dropdown, "b"),
        (bool | None, None, widgets.Dropdown, None),
        (list[float], [1.5], widgets.FloatsInput, [1.5]),
        (list[Literal["x", "y"]], ["y"], widgets.TagsInput, ["y"]),
        (dict[str, Any], {"k": [1]}, widgets.Textarea, {"k": [1]}),
    ],
)
def test_primitive_schemas(tp: Any, start: Any, widget: type, expected: Any) -> None:
    field = schema_field(TypeAdapter(tp).json_schema(), start, label="v")
    assert any(isinstance(w, widget) for w in widgets_of(field.widget))
    assert field.get() == expected


def test_bad_json_is_reported_not_sent() -> None:
    field = schema_field({}, label="answer")
    area = field.widget
    area.value = "{not json"
    with pytest.raises(FieldError, match="answer: not valid JSON"):
        field.get()
    area.value = ""
    with pytest.raises(FieldError, match="enter a JSON value"):
        field.get()
    area.value = '{"ok": true}'
    assert field.get() == {"ok": True}


def test_an_empty_required_text_is_refused_beside_its_field() -> None:
    field = schema_field(Address.model_json_schema())
    with pytest.raises(FieldError, match="Street: required"):
        field.get()
    street = field.children["street"]
    assert "required" in street.error.value and street.error in street.row.children
    street.widget.value = "1 Main St"
    assert field.get() == {"street": "1 Main St"} and street.error.value == ""


def test_labels_are_words_not_pydantic_titles() -> None:
    class Move(BaseModel):
        toAccount: str
        amount_usd: float = Field(title="Amount in dollars")

    c = controls(schema_field(Move.model_json_schema()))
    assert set(c) == {"To account", "Amount in dollars"}
    assert c["To account"].description == "To account *"


def test_recursive_models_stop_at_a_json_area() -> None:
    field = schema_field(Tree.model_json_schema(), {"name": "root"})
    assert field.get()["name"] == "root"
    assert any(isinstance(w, widgets.Textarea) for w in widgets_of(field.widget))


def test_disabling_a_field_disables_every_control() -> None:
    field = schema_field(Order.model_json_schema())
    field.set_disabled(True)
    assert field.controls and all(c.disabled for c in field.controls)
    field.set_disabled(False)
    assert not any(c.disabled for c in field.controls)
