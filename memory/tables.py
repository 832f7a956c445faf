"""The database tables, as typed SQLAlchemy models. Schema changes go through Alembic (memory/migrations)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    String,
    Table,
    Text,
    UniqueConstraint,
    false,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeDecorator


def utcnow() -> datetime:
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """A timestamp that is always timezone-aware UTC, also on SQLite (which stores no zone)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        return value.replace(tzinfo=UTC) if value is not None and value.tzinfo is None else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        return value.replace(tzinfo=UTC) if value is not None and value.tzinfo is None else value


class Base(DeclarativeBase):
    type_annotation_map = {dict[str, Any]: JSON, Any: JSON, datetime: UTCDateTime()}
    __table__: ClassVar[Table]
    """Each model here maps one table (SQLAlchemy types it as any `FromClause`)."""


class ThreadRow(Base):
    """A conversation, owned by one resource (a Slack user)."""

    __tablename__ = "threads"
    id: Mapped[str] = mapped_column(String(255), primary_key=True)
    resource_id: Mapped[str] = mapped_column(String(255))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class RunRow(Base):
    """One agent invocation: what it needs to go on after a restart, never a copy of the conversation."""

    __tablename__ = "runs"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    agent_id: Mapped[str] = mapped_column(String(255))
    thread_id: Mapped[str | None] = mapped_column(String(255))
    resource_id: Mapped[str | None] = mapped_column(String(255))
    uses_memory: Mapped[bool] = mapped_column(Boolean, default=False)
    parent_run_id: Mapped[str | None] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(32))
    owner: Mapped[str | None] = mapped_column(String(255))
    heartbeat_at: Mapped[datetime | None]
    step: Mapped[int] = mapped_column(Integer, default=0)
    max_steps: Mapped[int] = mapped_column(Integer)
    require_tool_approval: Mapped[bool | None] = mapped_column(Boolean)
    request_context: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    finish_reason: Mapped[str | None] = mapped_column(String(32))
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)
    suspended_at: Mapped[datetime | None]
    previews_started: Mapped[Any | None] = mapped_column(JSON)
    """The calls whose previews a worker started at the run's next step, recorded before they run:
    {"step": N, "calls": [args fingerprint, ...]}. A process that takes the run over and meets one of those
    calls again at that step does not run its preview a second time (a preview runs once per call)."""

    __table_args__ = (
        Index("ix_runs_agent_status", "agent_id", "status"),
        Index("ix_runs_thread_status", "thread_id", "status"),
        Index("ix_runs_parent", "parent_run_id"),
        Index("ix_runs_agent_suspended", "agent_id", "suspended_at", "id"),
        Index("ix_runs_resource_status", "resource_id", "status"),
        Index("ix_runs_resource_agent_suspended", "resource_id", "agent_id", "suspended_at", "id"),
        Index("ix_runs_thread_agent_suspended", "thread_id", "agent_id", "suspended_at", "id"),
    )


class MessageRow(Base):
    """One message in OpenAI chat form. With memory it belongs to a thread; it always belongs to a run."""

    __tablename__ = "messages"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(String(64), ForeignKey("runs.id", ondelete="CASCADE"))
    thread_id: Mapped[str | None] = mapped_column(String(255))
    role: Mapped[str] = mapped_column(String(16))
    content: Mapped[str | None] = mapped_column(Text)
    tool_calls: Mapped[Any | None] = mapped_column(JSON)
    tool_call_id: Mapped[str | None] = mapped_column(String(255))
    source_id: Mapped[str | None] = mapped_column(String(255))
    """A user message's own id in the front end it came from (a Slack message's ts); None when it has none.
    Unique per thread: one run or one decision takes a thread message, once (`MessageTakenError`)."""
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

    __table_args__ = (
        Index("ix_messages_thread", "thread_id", "id"),
        Index("ix_messages_run", "run_id", "id"),
        Index("uq_messages_thread_source", "thread_id", "source_id", unique=True),
    )


class ToolCallRow(Base):
    """One tool call the model made, with its state, the decision about it, and its result."""

    __tablename__ = "tool_calls"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(String(64), ForeignKey("runs.id", ondelete="CASCADE"))
    tool_call_id: Mapped[str] = mapped_column(String(255))
    agent_id: Mapped[str] = mapped_column(String(255))
    thread_id: Mapped[str | None] = mapped_column(String(255))
    resource_id: Mapped[str | None] = mapped_column(String(255))
    step: Mapped[int] = mapped_column(Integer)
    position: Mapped[int] = mapped_column(Integer)
    tool_name: Mapped[str] = mapped_column(String(255))
    args: Mapped[Any] = mapped_column(JSON, nullable=True)
    fingerprint: Mapped[str | None] = mapped_column(String(64))
    state: Mapped[str] = mapped_column(String(32))
    requires_approval: Mapped[bool] = mapped_column(Boolean, default=False)
    suspend_payload: Mapped[Any | None] = mapped_column(JSON)
    resume_data: Mapped[Any | None] = mapped_column(JSON)
    result: Mapped[Any | None] = mapped_column(JSON)
    is_error: Mapped[bool] = mapped_column(Boolean, default=False)
    decision: Mapped[str | None] = mapped_column(String(16))
    decided_by: Mapped[str | None] = mapped_column(String(255))
    decided_for: Mapped[str | None] = mapped_column(String(255))
    """Whom `decided_by` stood in for (a delegation in force at the decision); None: their own decision."""
    decided_at: Mapped[datetime | None]
    reason: Mapped[str | None] = mapped_column(Text)
    # A supervisor's call to a sub-agent shows, and passes decisions down to, the inner call that waits.
    child_run_id: Mapped[str | None] = mapped_column(String(64))
    child_tool_call_id: Mapped[str | None] = mapped_column(String(255))
    shown_tool_name: Mapped[str | None] = mapped_column(String(255))
    shown_args: Mapped[Any | None] = mapped_column(JSON)
    resume_schema: Mapped[Any | None] = mapped_column(JSON)
    approvals: Mapped[Any | None] = mapped_column(JSON)
    """The approvals counted so far toward its policy's `approvals_required`, in order: [{"by", "at",
    "fingerprint"}]; None before the first. The call is approved when the last one needed lands."""
    approval_count: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    """len(approvals): what the conditional UPDATE that counts the next approval checks."""
    preview: Mapped[Any | None] = mapped_column(JSON)
    """What the tool's dry run said before the approval was posted: {"ok": true, "result": ...} or
    {"ok": false, "error": "..."}; None when the tool has no preview (or the call was not previewed)."""
    rule: Mapped[Any | None] = mapped_column(JSON)
    """The admin's rule that decided the call when it was proposed (`ToolRule.fields()` with its
    `position`, or `{"failed": why, ...}` when a condition could not be evaluated); None: no rule matched."""
    held_by: Mapped[str | None] = mapped_column(String(255))
    """The process (`runs.owner`) that holds a live suspension of this call (an MCP server's question,
    whose call stays open there): only it can carry the answer on; if it stops, the call is interrupted."""
    interrupted: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    escalated_at: Mapped[datetime | None]
    """When a replica took on escalating the current wait (its policy's `escalate_to`); None: not
    escalated. Set by one conditional UPDATE, so one replica escalates each wait."""
    """It waits for a human again (`awaiting_approval`) because its tool started, or its live question was
    held, when its process stopped, and no result was stored: it may or may not have taken effect. Set by
    the recovery's move (`memory.states.INTERRUPTED_FROM`); a move that stores a new `suspend_payload`
    (a new wait) clears it."""
    undo_state: Mapped[str | None] = mapped_column(String(16))
    """After the call ran (`done`): "undoing" once one person's Undo won it (one conditional UPDATE), then
    "undone" or "undo_failed"; None: not undone."""
    undone_by: Mapped[str | None] = mapped_column(String(255))
    undone_at: Mapped[datetime | None]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)
    suspended_at: Mapped[datetime | None]

    __table_args__ = (
        UniqueConstraint("run_id", "tool_call_id", name="uq_tool_calls_run_call"),
        Index("ix_tool_calls_thread_state", "thread_id", "state"),
        Index("ix_tool_calls_run_state", "run_id", "state"),
        Index("ix_tool_calls_agent_state_since", "agent_id", "state", "suspended_at"),
    )


class AuditRow(Base):
    """What happened to a tool call, who did it, through what, when: kept after the run is finished."""

    __tablename__ = "audit"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str | None] = mapped_column(String(64))
    """None on a line that belongs to no run (a policy change)."""
    tool_call_id: Mapped[str | None] = mapped_column(String(255))
    tool_name: Mapped[str] = mapped_column(String(255))
    action: Mapped[str] = mapped_column(String(32))
    actor: Mapped[str | None] = mapped_column(String(255))
    on_behalf_of: Mapped[str | None] = mapped_column(String(255))
    """Whom the actor stood in for (a delegation in force); None: on their own behalf."""
    detail: Mapped[str | None] = mapped_column(Text)
    at: Mapped[datetime] = mapped_column(default=utcnow)
    via: Mapped[str | None] = mapped_column(String(16))
    args_fingerprint: Mapped[str | None] = mapped_column(String(64))
    policy_version: Mapped[int | None] = mapped_column(Integer)
    before: Mapped[Any] = mapped_column(JSON(none_as_null=True), nullable=True)
    """What changed, as it was: a policy change's whole policy, an edit's arguments."""
    after: Mapped[Any] = mapped_column(JSON(none_as_null=True), nullable=True)
    """What changed, as it is now."""

    __table_args__ = (Index("ix_audit_at", "at"), Index("ix_audit_tool_at", "tool_name", "at"))


class PolicyRow(Base):
    """An admin's policy for one tool; `version` goes up by one with every change."""

    __tablename__ = "tool_policies"
    tool_name: Mapped[str] = mapped_column(String(255), primary_key=True)
    mode: Mapped[str] = mapped_column(String(32), default="inherit")
    approvers: Mapped[Any] = mapped_column(JSON, default=list)
    self_approval: Mapped[bool] = mapped_column(Boolean, default=True)
    expires_after: Mapped[int | None] = mapped_column(Integer)
    approvals_required: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    grant_seconds: Mapped[int | None] = mapped_column(Integer)
    undo_seconds: Mapped[int | None] = mapped_column(Integer)
    """Seconds after a call ran during which it may be undone; None: the default (300), 0: never."""
    """The longest standing grant an approver may give, in seconds; None: no grants."""
    escalate_to: Mapped[str | None] = mapped_column(String(32))
    escalate_after: Mapped[int | None] = mapped_column(Integer)
    rules: Mapped[Any | None] = mapped_column(JSON)
    """The policy's ordered rules, as `ToolRule.fields()`; None or []: none."""
    version: Mapped[int] = mapped_column(Integer, default=0)
    updated_by: Mapped[str | None] = mapped_column(String(255))
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class GrantRow(Base):
    """A standing grant: an approver's "Approve and allow for 1 hour in this thread". Later calls of the
    same tool in the same thread (with the same arguments, when `args_fingerprint` is set) run without
    asking while it is live (not revoked, not past `expires_at`) and the tool's policy still allows grants."""

    __tablename__ = "tool_grants"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    agent_id: Mapped[str] = mapped_column(String(255))
    tool_name: Mapped[str] = mapped_column(String(255))
    thread_id: Mapped[str] = mapped_column(String(255))
    resource_id: Mapped[str | None] = mapped_column(String(255))
    granted_by: Mapped[str] = mapped_column(String(255))
    run_id: Mapped[str] = mapped_column(String(64))
    """The run of the call whose approval made the grant."""
    tool_call_id: Mapped[str] = mapped_column(String(255))
    """The call whose approval made the grant."""
    args_fingerprint: Mapped[str | None] = mapped_column(String(64))
    """Set: the grant covers only calls with these arguments; None: any arguments."""
    policy_version: Mapped[int] = mapped_column(Integer)
    """The version of the tool's policy the grant was given under."""
    granted_at: Mapped[datetime] = mapped_column()
    expires_at: Mapped[datetime] = mapped_column()
    revoked_at: Mapped[datetime | None] = mapped_column()
    revoked_by: Mapped[str | None] = mapped_column(String(255))

    __table_args__ = (Index("ix_tool_grants_scope", "agent_id", "tool_name", "thread_id", "expires_at"),)


class DelegationRow(Base):
    """An approver's "@bob decides for me until Friday": while it is in force (not ended, not past
    `ends_at`), `delegate` may decide what `delegator` may decide, never more, and never on their own request."""

    __tablename__ = "delegations"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    delegator: Mapped[str] = mapped_column(String(255))
    delegate: Mapped[str] = mapped_column(String(255))
    created_by: Mapped[str] = mapped_column(String(255))
    """Who made it: the delegator, or an admin for them."""
    starts_at: Mapped[datetime] = mapped_column()
    ends_at: Mapped[datetime] = mapped_column()
    ended_at: Mapped[datetime | None] = mapped_column()
    """When it was revoked, or (written by the sweep) when its time ran out; None: not ended yet."""
    ended_by: Mapped[str | None] = mapped_column(String(255))

    __table_args__ = (Index("ix_delegations_delegate", "delegate", "ends_at"),)
