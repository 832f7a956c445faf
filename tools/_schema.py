"""One schema type for both ways a tool can describe data: a pydantic model class or a JSON Schema dict.

Everything else in the project talks to `Schema`, so it never needs to know which of the two it got.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import jsonschema
import pydantic

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


class Schema:
    """A schema given as a pydantic model class or as a JSON Schema dict (Draft 2020-12)."""

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


_VALIDATORS: dict[str, jsonschema.Draft202012Validator] = {}
"""Checked schemas, by their JSON: a tool built again (an agent per request, after a restart) is not checked again."""


def _validator_for(schema: dict[str, Any]) -> jsonschema.Draft202012Validator:
    key = json.dumps(schema, sort_keys=True, default=str)
    validator = _VALIDATORS.get(key)
    if validator is None:
        jsonschema.Draft202012Validator.check_schema(schema)
        validator = _VALIDATORS[key] = jsonschema.Draft202012Validator(schema)
    return validator
