"""Reading and validating a submitted schema form; errors come back keyed by the form's block ids."""

from __future__ import annotations

from typing import Any

from tools import Schema, SchemaValidationError

from ...form_builder import errors_by_block, read_form


def validated_form(schema: dict[str, Any], state_values: dict[str, Any]) -> tuple[Any, dict[str, str]]:
    """The form's data, and the errors to show in the modal (empty when the data fits `schema`)."""
    data, errors = read_form(schema, state_values)
    if errors:
        return data, errors
    try:
        Schema(schema).validate(data)
    except SchemaValidationError as exc:
        return data, errors_by_block(schema, [(error.path, error.message) for error in exc.errors])
    return data, {}


def schema_errors(schema: dict[str, Any], error: Exception) -> dict[str, str]:
    """Block errors for a runtime validation error carrying `errors` with `path` and `message`."""
    problems = [(getattr(e, "path", "/"), getattr(e, "message", str(e))) for e in getattr(error, "errors", [])]
    return errors_by_block(schema, problems or [("/", str(error))])
