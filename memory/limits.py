"""How long a value from outside may be: the width of the column it is stored in.

PostgreSQL refuses a value longer than its `varchar(n)` column (a statement that fails, a 500 when it
gets that far) while SQLite keeps it whole, so a front end checks each id and name from outside
(an HTTP path or body, a Slack payload, a form) against its column where it comes in, before any
statement sees it, and answers with a 4xx. The widths are read from the table definitions, so a
migration that widens a column widens its check; each package names the widths of its own tables
the same way (`width(SomeRow.column)`). Lengths are counted in characters, as `varchar(n)` counts them.

Imports nothing from `bot`.
"""

from __future__ import annotations

from typing import Any

from .tables import DelegationRow, GrantRow, PolicyRow, RunRow, ThreadRow, ToolCallRow


class TooLongError(ValueError):
    """A value longer than the column it would be stored in; the message names it and its limit."""

    def __init__(self, name: str, limit: int):
        self.name = name
        self.limit = limit
        super().__init__(f"{name} is longer than {limit} characters")


def width(column: Any) -> int:
    """The most characters `column` (a `String(n)` column, or a mapped attribute of one) holds."""
    length = getattr(column.type, "length", None)
    if not isinstance(length, int):
        raise TypeError(f"{column} is not a column of bounded text")
    return length


def fitting(value: str, limit: int, name: str) -> str:
    """`value` when it has at most `limit` characters; raises `TooLongError` (naming it `name`) otherwise."""
    if len(value) > limit:
        raise TooLongError(name, limit)
    return value


RUN_ID = width(RunRow.id)
TOOL_CALL_ID = width(ToolCallRow.tool_call_id)
TOOL_NAME = width(ToolCallRow.tool_name)
THREAD_ID = width(ThreadRow.id)
RESOURCE_ID = width(ThreadRow.resource_id)
PERSON = min(width(ToolCallRow.decided_by), width(GrantRow.granted_by), width(PolicyRow.updated_by))
"""Who decides, grants, revokes or changes a policy, as a front end names them."""
GRANT_ID = width(GrantRow.id)
DELEGATION_ID = width(DelegationRow.id)
SLACK_ID = width(PolicyRow.escalate_to)
"""A Slack user, user-group or channel ID a policy names (its approvers, its escalation target)."""
