"""Reading and validating a submitted schema form; errors come back keyed by the form's block ids."""

from __future__ import annotations

from typing import Any

from ...form_builder import form_errors, read_form


def validated_form(schema: dict[str, Any], state_values: dict[str, Any]) -> tuple[Any, dict[str, str]]:
    """The form's data, and the errors to show in the modal, per field in plain words (empty when the
    data fits `schema`)."""
    data, errors = read_form(schema, state_values)
    if errors:
        return data, errors
    return data, form_errors(schema, data)
