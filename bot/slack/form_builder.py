"""A Slack form generated from a JSON Schema, and the data read back from a submitted form.

Strings, numbers, integers, booleans and enums get their own inputs; anything else (objects, arrays,
unions) is edited as JSON text. A schema that is not an object with properties is edited whole, as
JSON. Pure functions: `form_errors` checks the data read back against the schema and says what is
wrong in words a person understands ("Must be more than 0."), never in JSON Schema's wording, and in the
language of the person who fills the form in (the `Translator` each function takes).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, cast

import jsonschema
from slack_sdk.models.blocks import (
    Block,
    CheckboxesElement,
    InputBlock,
    NumberInputElement,
    Option,
    PlainTextInputElement,
    StaticSelectElement,
)

from tools import InvalidSchemaError, JsonValueError, read_json, schema_errors

from .translator import N_, Translator

FIELD_PREFIX = "field:"
WHOLE = "__json__"
"""The field name used when the whole value is edited as JSON."""
VALUE_ACTION = "value"
SCHEMA_NOT_VALID = N_("No answer can be accepted: this question's form is broken (its schema is not valid).")
_MAX_FIELDS = 90  # a modal holds at most 100 blocks
_MAX_OPTIONS = 100
_TEXT_LIMIT = 3000  # plain_text_input's maximum length
_MISSING = object()


@dataclass(frozen=True, kw_only=True)
class Field:
    """One input of the form."""

    name: str
    kind: str
    """`string`, `integer`, `number`, `boolean`, `enum` or `json`."""
    label: str
    required: bool
    schema: dict[str, Any]
    enum: tuple[Any, ...] = ()
    hint: str | None = None

    @property
    def block_id(self) -> str:
        return FIELD_PREFIX + self.name


def fields_of(schema: dict[str, Any], tr: Translator) -> list[Field]:
    """The inputs for `schema`: one per property of an object schema, else a single JSON input."""
    schema = _resolve(schema, schema)
    properties = schema.get("properties")
    if schema.get("type", "object") != "object" or not isinstance(properties, dict) or not properties:
        return [Field(name=WHOLE, kind="json", label=tr.gettext("Value (JSON)"), required=True, schema=schema)]
    if len(properties) > _MAX_FIELDS:
        return [Field(name=WHOLE, kind="json", label=tr.gettext("Arguments (JSON)"), required=True, schema=schema)]
    required = set(schema.get("required", []))
    return [
        _field(name, _resolve(prop, schema), name in required, root=schema, tr=tr) for name, prop in properties.items()
    ]


def _field(name: str, prop: dict[str, Any], required: bool, *, root: dict[str, Any], tr: Translator) -> Field:
    nullable = False
    variants = prop.get("anyOf") or prop.get("oneOf")
    if variants:
        others = [_resolve(v, root) for v in variants if v.get("type") != "null"]
        nullable = len(others) < len(variants)
        if len(others) == 1:
            prop = {**prop, **others[0]}
            prop.pop("anyOf", None)
            prop.pop("oneOf", None)
    label = str(prop.get("title") or name)[:150]
    hint = prop.get("description")
    hint = str(hint)[:150] if hint else None
    required = required and not nullable
    enum = prop.get("enum")
    if enum is None and "const" in prop:
        enum = [prop["const"]]
    kind_type = prop.get("type")
    if isinstance(enum, list) and 0 < len(enum) <= _MAX_OPTIONS and all(_scalar(v) for v in enum):
        return Field(name=name, kind="enum", label=label, required=required, schema=prop, enum=tuple(enum), hint=hint)
    if kind_type in ("string", "integer", "number", "boolean"):
        return Field(name=name, kind=kind_type, label=label, required=required, schema=prop, hint=hint)
    label = tr.gettext("{field} (JSON)", field=label)
    return Field(name=name, kind="json", label=label, required=required, schema=prop, hint=hint)


def _scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool)) and len(str(value)) <= 75


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    """Follow a local `$ref` (`#/$defs/...`, as pydantic writes them)."""
    seen = 0
    while isinstance(schema, dict) and isinstance(schema.get("$ref"), str) and seen < 10:
        ref = schema["$ref"]
        if not ref.startswith("#/"):
            break
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part, {}) if isinstance(target, dict) else {}
        extra = {k: v for k, v in schema.items() if k != "$ref"}
        schema = {**target, **extra}
        seen += 1
    return schema if isinstance(schema, dict) else {}


def build_form_blocks(schema: dict[str, Any], tr: Translator, values: Any = None) -> list[Block]:
    """Input blocks for `schema`, filled in with `values` (the current arguments, or nothing)."""
    fields = fields_of(schema, tr)
    if fields[0].name == WHOLE:
        return [_input(fields[0], values, tr)]
    values = values if isinstance(values, dict) else {}
    return [_input(field, values.get(field.name, _MISSING), tr) for field in fields]


def _input(field: Field, value: Any, tr: Translator) -> InputBlock:
    has_value = value is not _MISSING and value is not None
    element: Any
    if field.kind == "enum":
        options = [Option(text=str(v)[:75], value=json.dumps(v)) for v in field.enum]
        initial = next((o for o, v in zip(options, field.enum, strict=True) if has_value and v == value), None)
        element = StaticSelectElement(action_id=VALUE_ACTION, options=options, initial_option=initial)
    elif field.kind == "boolean":
        option = Option(text=tr.gettext("Yes"), value="true")
        element = CheckboxesElement(
            action_id=VALUE_ACTION, options=[option], initial_options=[option] if value is True else None
        )
    elif field.kind in ("integer", "number"):
        element = NumberInputElement(
            action_id=VALUE_ACTION,
            is_decimal_allowed=field.kind == "number",
            initial_value=str(value) if has_value and _is_number(value) else None,
            min_value=_bound(field.schema.get("minimum")),
            max_value=_bound(field.schema.get("maximum")),
        )
    elif field.kind == "string":
        text = value if has_value and isinstance(value, str) else None
        multiline = bool(text and ("\n" in text or len(text) > 150)) or (field.schema.get("maxLength") or 0) > 150
        element = PlainTextInputElement(
            action_id=VALUE_ACTION,
            initial_value=text[:_TEXT_LIMIT] if text else None,
            multiline=multiline,
            max_length=min(int(field.schema.get("maxLength") or _TEXT_LIMIT), _TEXT_LIMIT),
        )
    else:
        text = json.dumps(value, indent=2, ensure_ascii=False) if has_value else None
        element = PlainTextInputElement(
            action_id=VALUE_ACTION,
            initial_value=text[:_TEXT_LIMIT] if text else None,
            multiline=True,
            max_length=_TEXT_LIMIT,
        )
    return InputBlock(
        block_id=field.block_id,
        label=field.label,
        hint=field.hint,
        element=element,
        optional=not field.required or field.kind == "boolean",
    )


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _bound(value: Any) -> str | None:
    return str(value) if _is_number(value) else None


def read_form(schema: dict[str, Any], state_values: dict[str, Any], tr: Translator) -> tuple[Any, dict[str, str]]:
    """The data in a submitted form (`view.state.values`), and errors by block id for inputs that could
    not be read (bad JSON, not a number). Empty optional inputs are left out of the data."""
    fields = fields_of(schema, tr)
    data: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for field in fields:
        raw = (state_values.get(field.block_id) or {}).get(VALUE_ACTION) or {}
        try:
            value = _read(field, raw, tr)
        except ValueError as exc:
            errors[field.block_id] = str(exc)
            continue
        if value is not _MISSING:
            data[field.name] = value
    if fields[0].name == WHOLE:
        return data.get(WHOLE), errors
    return data, errors


def _read(field: Field, raw: dict[str, Any], tr: Translator) -> Any:
    if field.kind == "boolean":
        return bool(raw.get("selected_options"))
    if field.kind == "enum":
        selected = raw.get("selected_option")
        if not selected:
            return _MISSING
        try:  # the option's value is JSON the form was built with, or a forged one: nesting bounded
            return read_json(selected["value"])
        except JsonValueError:
            raise ValueError(tr.gettext("Choose one of the options.")) from None
    text = raw.get("value")
    if text is None or (field.kind != "string" and not str(text).strip()):
        return _MISSING
    if field.kind == "string":
        return text
    if field.kind == "integer":
        try:
            return int(text)
        except ValueError:
            raise ValueError(tr.gettext("Enter a whole number.")) from None
    if field.kind == "number":
        try:
            number = float(text)
        except ValueError:
            raise ValueError(tr.gettext("Enter a number.")) from None
        if not math.isfinite(number):  # "nan", "inf", "1e400": no JSON number
            raise ValueError(tr.gettext("Enter a number (NaN and infinity are not numbers here)."))
        return int(number) if number.is_integer() and "." not in text else number
    try:
        return read_json(text)
    except JsonValueError as exc:
        raise ValueError(tr.gettext("Not valid JSON: {error}.", error=exc)) from None


def errors_by_block(schema: dict[str, Any], problems: list[tuple[str, str]], tr: Translator) -> dict[str, str]:
    """Map validation problems (`(path, message)`, path like `/city` or `/`) to the form's block ids.

    A problem at the root, or at a field the form does not show, goes to the first input.
    """
    fields = fields_of(schema, tr)
    names = {field.name for field in fields}
    errors: dict[str, str] = {}
    for path, message in problems:
        parts = [part for part in path.split("/") if part]
        name = parts[0] if parts and parts[0] in names else None
        if name is None and fields[0].name != WHOLE:
            missing = _missing_property(message, names)
            name = missing or fields[0].name
        block_id = FIELD_PREFIX + (name or WHOLE)
        text = message if not parts[1:] else f"{'/'.join(parts[1:])}: {message}"
        errors[block_id] = (errors[block_id] + "; " + text if block_id in errors else text)[:150]
    return errors


def _first_input(schema: Any, tr: Translator) -> str:
    try:
        return fields_of(schema, tr)[0].name
    except Exception:  # noqa: BLE001 - a schema this broken was shown as one JSON input
        return WHOLE


def _missing_property(message: str, names: set[str]) -> str | None:
    for name in names:
        if f"'{name}'" in message:
            return name
    return None


def form_errors(schema: dict[str, Any], data: Any, tr: Translator) -> dict[str, str]:
    """Why `data` does not fit `schema`, one message per input of the form (by block id); empty when it fits.
    A schema that is not valid fits nothing: the first input says so."""
    try:
        errors = list(schema_errors(schema, data))
    except InvalidSchemaError:
        return {FIELD_PREFIX + _first_input(schema, tr): tr.gettext(SCHEMA_NOT_VALID)}
    problems = []
    for error in errors:
        path = "/" + "/".join(str(part) for part in error.absolute_path)
        if error.validator == "required" and isinstance(error.instance, dict):
            missing = [name for name in cast(list[str], error.validator_value) if name not in error.instance]
            problems += [(path.rstrip("/") + "/" + name, tr.gettext("Fill this in.")) for name in missing]
            continue
        problems.append((path, human_message(error, tr)))
    shown: dict[str, str] = {}
    for problem in problems:  # the first problem of each input: one thing to fix at a time
        for block_id, text in errors_by_block(schema, [problem], tr).items():
            shown.setdefault(block_id, text)
    return shown


_TYPE_WORDS = {
    "integer": N_("a whole number"),
    "number": N_("a number"),
    "string": N_("text"),
    "boolean": N_("yes or no"),
    "array": N_("a list"),
    "object": N_("a JSON object"),
    "null": N_("empty"),
}
_FORMAT_WORDS = {
    "email": N_("an email address"),
    "uri": N_("a full URL (https://...)"),
    "url": N_("a full URL (https://...)"),
    "date": N_("a date like 2026-01-31"),
    "date-time": N_("a date and time like 2026-01-31T09:00:00Z"),
    "time": N_("a time like 09:00:00"),
    "uuid": N_("a UUID"),
    "ipv4": N_("an IPv4 address"),
}


def human_message(error: jsonschema.ValidationError, tr: Translator) -> str:
    """One validation problem as a person would say it; JSON Schema's own wording only for rare keywords."""
    keyword, limit = error.validator, cast(Any, error.validator_value)  # the schema's own value of the keyword
    if keyword == "minimum":
        return tr.gettext("Must be {limit} or more.", limit=_number(limit))
    if keyword == "exclusiveMinimum":
        return tr.gettext("Must be more than {limit}.", limit=_number(limit))
    if keyword == "maximum":
        return tr.gettext("Must be {limit} or less.", limit=_number(limit))
    if keyword == "exclusiveMaximum":
        return tr.gettext("Must be less than {limit}.", limit=_number(limit))
    if keyword == "multipleOf":
        return tr.gettext("Must be a multiple of {limit}.", limit=_number(limit))
    if keyword == "minLength":
        if limit == 1:
            return tr.gettext("Cannot be empty.")
        return tr.ngettext(
            "Must be at least {n} character long.", "Must be at least {n} characters long.", _count(limit)
        )
    if keyword == "maxLength":
        return tr.ngettext("Must be at most {n} character long.", "Must be at most {n} characters long.", _count(limit))
    if keyword == "pattern":
        return tr.gettext("Is not in the expected form (it must match {pattern}).", pattern=limit)
    if keyword == "format":
        words = _FORMAT_WORDS.get(str(limit))
        if words is None:
            return tr.gettext("Must be a valid {format}.", format=limit)
        return tr.gettext("Must be {what}.", what=tr.gettext(words))
    if keyword in ("enum", "const"):
        choices = limit if keyword == "enum" else [limit]
        shown = ", ".join(json.dumps(choice, ensure_ascii=False) for choice in choices[:10])
        if len(choices) == 1:
            return tr.gettext("Must be {value}.", value=shown)
        return tr.gettext("Must be one of {values}.", values=shown)
    if keyword == "type":
        wanted = [limit] if isinstance(limit, str) else list(limit)
        kinds = [tr.gettext(_TYPE_WORDS[kind]) if kind in _TYPE_WORDS else kind for kind in wanted]
        if len(kinds) == 1:
            return tr.gettext("Must be {what}.", what=kinds[0])
        return tr.gettext("Must be one of these: {kinds}.", kinds=", ".join(kinds))
    if keyword == "minItems":
        if limit == 1:
            return tr.gettext("Add at least one item.")
        return tr.ngettext("Add at least {n} item.", "Add at least {n} items.", _count(limit))
    if keyword == "maxItems":
        return tr.ngettext("At most {n} item.", "At most {n} items.", _count(limit))
    if keyword == "uniqueItems":
        return tr.gettext("Each item may appear only once.")
    if keyword == "additionalProperties" and isinstance(error.instance, dict):
        return tr.gettext("Unexpected field: {fields}.", fields=", ".join(sorted(map(str, error.instance))))
    if keyword in ("anyOf", "oneOf"):
        return tr.gettext("Does not match any of the allowed shapes.")
    return error.message


def _count(value: Any) -> int:
    """A schema's count limit (`minLength`, `maxItems`) as the number its plural form is chosen by."""
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def _number(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)
