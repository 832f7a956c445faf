"""Forms generated from JSON Schema, and reading submitted values back."""

from __future__ import annotations

from enum import Enum

import pytest
from pydantic import BaseModel

from bot.slack.form_builder import build_form_blocks, errors_by_block, fields_of, form_errors, read_form
from bot.slack.modal_builder import ModalTarget, build_answer_modal, build_decline_reason_modal, build_edit_args_modal
from bot.slack.translator import translator

EN = translator("en")


class Color(str, Enum):  # noqa: UP042 - the str mixin is what is under test
    red = "red"
    blue = "blue"


class Order(BaseModel):
    order_id: str
    amount: float
    count: int = 1
    urgent: bool = False
    color: Color = Color.red
    note: str | None = None
    tags: list[str] = []


SCHEMA = Order.model_json_schema()


def test_fields_from_a_pydantic_schema():
    kinds = {f.name: (f.kind, f.required) for f in fields_of(SCHEMA, EN)}
    assert kinds == {
        "order_id": ("string", True),
        "amount": ("number", True),
        "count": ("integer", False),
        "urgent": ("boolean", False),
        "color": ("enum", False),
        "note": ("string", False),
        "tags": ("json", False),
    }


def test_blocks_are_filled_with_the_current_values():
    blocks = {
        b.block_id: b.to_dict()
        for b in build_form_blocks(
            SCHEMA, EN, {"order_id": "A", "amount": 2.5, "urgent": True, "color": "blue", "tags": ["x"]}
        )
    }
    assert blocks["field:order_id"]["element"]["initial_value"] == "A"
    assert blocks["field:amount"]["element"] == {
        "type": "number_input",
        "action_id": "value",
        "is_decimal_allowed": True,
        "initial_value": "2.5",
    }
    assert blocks["field:count"]["element"]["is_decimal_allowed"] is False
    assert blocks["field:urgent"]["element"]["initial_options"][0]["value"] == "true"
    assert blocks["field:color"]["element"]["initial_option"]["value"] == '"blue"'
    assert '"x"' in blocks["field:tags"]["element"]["initial_value"]


def test_reading_a_submitted_form():
    values = {
        "field:order_id": {"value": {"type": "plain_text_input", "value": "A-9"}},
        "field:amount": {"value": {"type": "number_input", "value": "12.5"}},
        "field:count": {"value": {"type": "number_input", "value": "3"}},
        "field:urgent": {"value": {"type": "checkboxes", "selected_options": [{"value": "true"}]}},
        "field:color": {"value": {"type": "static_select", "selected_option": {"value": '"blue"'}}},
        "field:note": {"value": {"type": "plain_text_input", "value": None}},
        "field:tags": {"value": {"type": "plain_text_input", "value": '["a", "b"]'}},
    }
    data, errors = read_form(SCHEMA, values, EN)
    assert errors == {}
    assert data == {"order_id": "A-9", "amount": 12.5, "count": 3, "urgent": True, "color": "blue", "tags": ["a", "b"]}


def test_unreadable_values_are_errors_on_their_block():
    values = {
        "field:tags": {"value": {"type": "plain_text_input", "value": "[nope"}},
        "field:count": {"value": {"type": "number_input", "value": "x"}},
    }
    _, errors = read_form(SCHEMA, values, EN)
    assert set(errors) == {"field:tags", "field:count"}


@pytest.mark.parametrize("typed", ["nan", "NaN", "inf", "-Infinity", "1e400"])
def test_a_number_that_is_not_finite_is_a_field_error(typed):
    """NaN passes exclusiveMinimum: 0 and no database stores it: the modal says so at the field."""
    values = {
        "field:order_id": {"value": {"type": "plain_text_input", "value": "注文-1"}},
        "field:amount": {"value": {"type": "number_input", "value": typed}},
        "field:tags": {"value": {"type": "plain_text_input", "value": f"[{typed if typed[0] != 'n' else 'NaN'}]"}},
    }
    _, errors = read_form(SCHEMA, values, EN)
    assert set(errors) == {"field:amount", "field:tags"}, errors


def test_validation_errors_map_to_blocks():
    errors = errors_by_block(SCHEMA, [("/amount", "must be > 0"), ("/", "'order_id' is a required property")], EN)
    assert errors == {"field:amount": "must be > 0", "field:order_id": "'order_id' is a required property"}


def test_a_schema_that_is_not_an_object_is_edited_as_json():
    schema = {"type": "array", "items": {"type": "integer"}}
    [block] = build_form_blocks(schema, EN, [1, 2])
    assert block.block_id == "field:__json__"
    data, errors = read_form(schema, {"field:__json__": {"value": {"type": "plain_text_input", "value": "[3]"}}}, EN)
    assert data == [3] and errors == {}


def test_modals_carry_the_reference_only():
    target = ModalTarget(ref="R1", tool_name="issue-refund")
    for view in (
        build_decline_reason_modal(target, {"a": 1}, EN),
        build_edit_args_modal(target, SCHEMA, {}, EN),
        build_answer_modal(
            target,
            {"question": "Which city?"},
            {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
            EN,
        ),
    ):
        as_dict = view.to_dict()
        assert as_dict["private_metadata"] == "R1" and len(as_dict["title"]["text"]) <= 24


LIMITS = {
    "type": "object",
    "properties": {
        "amount": {"type": "number", "exclusiveMinimum": 0, "maximum": 500},
        "count": {"type": "integer", "minimum": 1, "multipleOf": 2},
        "code": {"type": "string", "minLength": 1, "maxLength": 4, "pattern": "^[A-Z]+$"},
        "email": {"type": "string", "format": "email"},
        "size": {"enum": ["S", "M", "L"]},
        "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "uniqueItems": True},
        "city": {"type": "string"},
    },
    "required": ["city"],
}


@pytest.mark.parametrize(
    ("data", "shown"),
    [
        ({"amount": -5}, {"field:amount": "Must be more than 0."}),
        ({"amount": 0}, {"field:amount": "Must be more than 0."}),
        ({"amount": 600.5}, {"field:amount": "Must be 500 or less."}),
        ({"count": 0}, {"field:count": "Must be 1 or more."}),
        ({"count": 3}, {"field:count": "Must be a multiple of 2."}),
        ({"count": "two"}, {"field:count": "Must be a whole number."}),
        ({"code": ""}, {"field:code": "Cannot be empty."}),
        ({"code": "ABCDE"}, {"field:code": "Must be at most 4 characters long."}),
        ({"code": "ab"}, {"field:code": "Is not in the expected form (it must match ^[A-Z]+$)."}),
        ({"size": "XL"}, {"field:size": 'Must be one of "S", "M", "L".'}),
        ({"tags": []}, {"field:tags": "Add at least one item."}),
        ({"tags": ["a", "a"]}, {"field:tags": "Each item may appear only once."}),
        ({"tags": [1]}, {"field:tags": "0: Must be text."}),
    ],
)
def test_validation_messages_are_in_plain_words(data, shown):
    assert form_errors(LIMITS, {"city": "Paris", **data}, EN) == shown


def test_a_missing_required_field_is_shown_at_that_field():
    assert form_errors(LIMITS, {}, EN) == {"field:city": "Fill this in."}
    assert form_errors(LIMITS, {"city": "Paris", "amount": 3}, EN) == {}


def test_no_message_repeats_json_schema_wording():
    problems = form_errors(LIMITS, {"amount": -5, "count": 0, "code": "", "size": "XL", "tags": []}, EN)
    assert len(problems) == 6
    for text in problems.values():
        assert "less than or equal" not in text and "is not one of" not in text and "is a required property" not in text
