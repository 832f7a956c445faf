"""One schema type for both ways a tool can describe data: a pydantic model class or a JSON Schema dict.

Everything else in the project talks to `Schema`, so it never needs to know which of the two it got.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import jsonschema
import pydantic
from jsonschema.validators import extend

from . import _patterns
from ._json_values import NOT_FINITE, non_finite_path


@dataclass(frozen=True)
class SchemaError:
    """One reason a value does not fit a schema."""

    path: str
    """Where in the value the problem is, as a JSON pointer-like path (`/items/0/name`, or `/` for the root)."""
    message: str
    """What is wrong there."""

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class SchemaValidationError(ValueError):
    """A value failed a schema; `errors` lists every problem with its path."""

    def __init__(self, errors: list[SchemaError]):
        self.errors = errors
        super().__init__("; ".join(str(e) for e in errors))


class InvalidSchemaError(ValueError):
    """A JSON Schema dict is not a valid Draft 2020-12 schema, or has a pattern RE2 cannot run
    (see `check_schema`); `problem` says what and where, in one line."""

    def __init__(self, problem: str):
        self.problem = problem
        super().__init__(f"not a valid JSON Schema: {problem}")


class Schema:
    """A schema given as a pydantic model class or as a JSON Schema dict (Draft 2020-12).

    A dict is checked when the `Schema` is made (`InvalidSchemaError`), and its patterns run on RE2."""

    def __init__(self, source: type[pydantic.BaseModel] | dict[str, Any]):
        self.model: type[pydantic.BaseModel] | None = None
        if isinstance(source, type) and issubclass(source, pydantic.BaseModel):
            self.model = source
            self.json_schema: dict[str, Any] = source.model_json_schema()
        elif isinstance(source, dict):
            self.json_schema = source
            self._validator = _validator_for(source)
        else:
            raise TypeError(f"a schema is a pydantic model class or a JSON Schema dict, not {type(source).__name__}")

    @classmethod
    def of(cls, source: Any) -> Schema | None:
        if source is None or isinstance(source, Schema):
            return source
        return cls(source)

    def validate(self, value: Any) -> Any:
        """Return the validated value (a model instance for a model schema); raise SchemaValidationError.

        A number that is not finite (NaN, infinity) fails every schema: JSON has no such numbers, and
        JSON Schema's bounds do not hold for them (NaN passes `exclusiveMinimum: 0`)."""
        non_finite = non_finite_path(value)
        if non_finite is not None:
            raise SchemaValidationError([SchemaError(non_finite, NOT_FINITE)])
        if self.model is not None:
            try:
                return self.model.model_validate(value)
            except pydantic.ValidationError as exc:
                raise SchemaValidationError(
                    [SchemaError(_pointer(err["loc"]), err["msg"]) for err in exc.errors()]
                ) from None
        errors = sorted(self._validator.iter_errors(value), key=lambda e: list(e.absolute_path))
        if errors:
            raise SchemaValidationError([SchemaError(_pointer(e.absolute_path), e.message) for e in errors])
        return value


def to_jsonable(value: Any) -> Any:
    """Plain JSON data for a validated value (model instances are dumped in JSON mode)."""
    if isinstance(value, pydantic.BaseModel):
        return value.model_dump(mode="json")
    return value


def _pointer(parts: Any) -> str:
    return "/" + "/".join(str(p) for p in parts)


_Validator = extend(jsonschema.Draft202012Validator, _patterns.KEYWORDS)  # type: ignore[no-untyped-call]
"""Draft 2020-12 with every regular expression on RE2 (tools/_patterns.py): no pattern can stall the loop."""

_META_FORMATS = jsonschema.FormatChecker(
    [name for name in jsonschema.Draft202012Validator.FORMAT_CHECKER.checkers if name != "regex"]
)
_META_FORMATS.checks("regex", raises=_patterns.PatternError)(_patterns.is_regex)
_META = _Validator(jsonschema.Draft202012Validator.META_SCHEMA, format_checker=_META_FORMATS)
"""The meta-schema check: the meta-schema asks `format: regex` of every pattern, here "RE2 compiles it"."""


def check_schema(schema: Any) -> None:
    """Raise `InvalidSchemaError` unless `schema` is a JSON Schema dict the bot can check values against:
    valid under Draft 2020-12's meta-schema, with every `pattern` and `patternProperties` key a regular
    expression RE2 compiles (no backreferences or lookaround)."""
    if not isinstance(schema, dict):
        raise InvalidSchemaError(f"a schema is a JSON object, not {type(schema).__name__}")
    error = jsonschema.exceptions.best_match(_META.iter_errors(schema))
    if error is None:
        return
    message = error.message
    if error.validator == "format" and error.validator_value == "regex":
        message = f"{error.instance!r} is not a regular expression RE2 runs ({error.cause})"
    raise InvalidSchemaError(f"{_pointer(error.absolute_path)}: {message}")


def schema_errors(schema: dict[str, Any], value: Any) -> Iterator[jsonschema.ValidationError]:
    """jsonschema's own errors of `value` against `schema` (for a front end that words them itself);
    raises `InvalidSchemaError`."""
    errors: Iterator[jsonschema.ValidationError] = _validator_for(schema).iter_errors(value)
    return errors


_VALIDATORS: OrderedDict[str, Any] = OrderedDict()
"""Checked schemas, by their JSON: a tool built again (an agent per request, after a restart) is not checked
again. The most recently used few: a server may send a new schema with every question."""
_KEPT = 512


def _validator_for(schema: dict[str, Any]) -> Any:
    key = json.dumps(schema, sort_keys=True, default=str)
    validator = _VALIDATORS.get(key)
    if validator is not None:
        _VALIDATORS.move_to_end(key)
        return validator
    check_schema(schema)
    validator = _VALIDATORS[key] = _Validator(schema)
    if len(_VALIDATORS) > _KEPT:
        _VALIDATORS.popitem(last=False)
    return validator
