"""What storage gives the runtime of a run and of a tool call, and takes back: plain records, one field
per column of `runs` and `tool_calls` (`memory/tables.py`), never an ORM instance (no session behind
it, nothing loaded lazily, nothing written by changing a field). The runtime keeps working copies of
them while it drives a run; only `RunStorage`'s methods write. `tests/storage/test_records.py` holds
the fields to the tables' columns."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any, TypedDict


@dataclass(slots=True, kw_only=True)
class StoredRun:
    """One agent invocation: what it needs to go on after a restart, never a copy of the conversation."""

    id: str
    agent_id: str
    status: str
    max_steps: int
    thread_id: str | None = None
    resource_id: str | None = None
    uses_memory: bool = False
    parent_run_id: str | None = None
    owner: str | None = None
    heartbeat_at: datetime | None = None
    step: int = 0
    require_tool_approval: bool | None = None
    request_context: dict[str, Any] = field(default_factory=dict)
    finish_reason: str | None = None
    error: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    suspended_at: datetime | None = None
    previews_started: Any = None


@dataclass(slots=True, kw_only=True)
class StoredToolCall:
    """One tool call the model made, with its state, the decision about it, and its result (the columns
    are described in `memory/tables.py`'s `ToolCallRow`)."""

    run_id: str
    tool_call_id: str
    agent_id: str
    step: int
    position: int
    tool_name: str
    state: str
    id: int | None = None
    """The row's key, None until it is stored."""
    thread_id: str | None = None
    resource_id: str | None = None
    args: Any = None
    fingerprint: str | None = None
    requires_approval: bool = False
    suspend_payload: Any = None
    resume_data: Any = None
    result: Any = None
    is_error: bool = False
    decision: str | None = None
    decided_by: str | None = None
    decided_for: str | None = None
    decided_at: datetime | None = None
    reason: str | None = None
    child_run_id: str | None = None
    child_tool_call_id: str | None = None
    shown_tool_name: str | None = None
    shown_args: Any = None
    resume_schema: Any = None
    approvals: Any = None
    approval_count: int = 0
    preview: Any = None
    rule: Any = None
    held_by: str | None = None
    interrupted: bool = False
    escalated_at: datetime | None = None
    undo_state: str | None = None
    undone_by: str | None = None
    undone_at: datetime | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    suspended_at: datetime | None = None

    @property
    def displayed_tool_name(self) -> str:
        """The tool a human decides about: the inner one for a supervisor's call that passes a decision down."""
        return self.shown_tool_name or self.tool_name

    @property
    def displayed_args(self) -> Any:
        """The arguments a human decides about (the inner call's, for a supervisor's call)."""
        return self.shown_args if self.shown_tool_name else self.args


class RunColumns(TypedDict, total=False):
    """The columns of a run a move may set besides its status (`RunStorage.move_run`)."""

    owner: str | None
    step: int
    finish_reason: str | None
    error: str | None


class StartColumns(TypedDict, total=False):
    """The columns of a tool call its start may set (`RunStorage.start`)."""

    held_by: str | None
    child_run_id: str | None
    """A sub-agent's run, named with the mark so a recovery finds it."""
    child_tool_call_id: str | None


class CallColumns(StartColumns, total=False):
    """The columns of a tool call a move may set besides its state (`RunStorage.transition`)."""

    decision: str | None
    decided_by: str | None
    decided_for: str | None
    """Whom `decided_by` stood in for (a delegation in force at the decision)."""
    decided_at: datetime | None
    reason: str | None
    args: Any
    fingerprint: str | None
    """With `args`: an edit of the arguments."""
    shown_tool_name: str | None
    shown_args: Any
    requires_approval: bool
    suspend_payload: Any
    suspended_at: datetime | None
    resume_schema: Any
    resume_data: Any
    approvals: list[dict[str, Any]] | None
    approval_count: int
    preview: Any
    interrupted: bool
    result: Any
    is_error: bool


def values_of(record: StoredRun | StoredToolCall) -> dict[str, Any]:
    """Every field of `record`, by column name."""
    return {f.name: getattr(record, f.name) for f in fields(record)}


__all__ = ["CallColumns", "RunColumns", "StartColumns", "StoredRun", "StoredToolCall", "values_of"]
