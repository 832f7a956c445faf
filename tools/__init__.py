"""The tool contract shared by the agent runtime and every tool: `create_tool`, `Tool`, `ToolContext`.

This package imports nothing from `bot` or `memory`.
"""

from ._json_values import JsonValueError, clean_text, plain_json, read_json
from ._progress import PROGRESS, PROGRESS_LIMIT, ProgressSink
from ._schema import (
    InvalidSchemaError,
    Schema,
    SchemaError,
    SchemaValidationError,
    check_schema,
    schema_errors,
    to_jsonable,
)
from ._tool import AgentToolContext, ApprovalCheck, ApprovalRule, Tool, ToolContext, create_tool, rule_says_yes

__all__ = [
    "AgentToolContext",
    "ApprovalCheck",
    "ApprovalRule",
    "InvalidSchemaError",
    "JsonValueError",
    "PROGRESS",
    "PROGRESS_LIMIT",
    "ProgressSink",
    "Schema",
    "SchemaError",
    "SchemaValidationError",
    "Tool",
    "ToolContext",
    "check_schema",
    "clean_text",
    "create_tool",
    "plain_json",
    "read_json",
    "rule_says_yes",
    "schema_errors",
    "to_jsonable",
]
