"""Runtime tables: threads, runs, messages, tool calls, audit.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "threads",
        sa.Column("id", sa.String(255), primary_key=True),
        sa.Column("resource_id", sa.String(255), nullable=False),
        sa.Column("created_at", TZ, nullable=False),
    )
    op.create_table(
        "runs",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("agent_id", sa.String(255), nullable=False),
        sa.Column("thread_id", sa.String(255)),
        sa.Column("resource_id", sa.String(255)),
        sa.Column("uses_memory", sa.Boolean, nullable=False),
        sa.Column("parent_run_id", sa.String(64)),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("owner", sa.String(255)),
        sa.Column("heartbeat_at", TZ),
        sa.Column("step", sa.Integer, nullable=False),
        sa.Column("max_steps", sa.Integer, nullable=False),
        sa.Column("require_tool_approval", sa.Boolean),
        sa.Column("request_context", sa.JSON, nullable=False),
        sa.Column("finish_reason", sa.String(32)),
        sa.Column("error", sa.Text),
        sa.Column("created_at", TZ, nullable=False),
        sa.Column("updated_at", TZ, nullable=False),
        sa.Column("suspended_at", TZ),
    )
    op.create_index("ix_runs_agent_status", "runs", ["agent_id", "status"])
    op.create_index("ix_runs_thread_status", "runs", ["thread_id", "status"])
    op.create_index("ix_runs_parent", "runs", ["parent_run_id"])
    op.create_table(
        "messages",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.String(64), sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("thread_id", sa.String(255)),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("content", sa.Text),
        sa.Column("tool_calls", sa.JSON),
        sa.Column("tool_call_id", sa.String(255)),
        sa.Column("created_at", TZ, nullable=False),
    )
    op.create_index("ix_messages_thread", "messages", ["thread_id", "id"])
    op.create_index("ix_messages_run", "messages", ["run_id", "id"])
    op.create_table(
        "tool_calls",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.String(64), sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("tool_call_id", sa.String(255), nullable=False),
        sa.Column("agent_id", sa.String(255), nullable=False),
        sa.Column("thread_id", sa.String(255)),
        sa.Column("resource_id", sa.String(255)),
        sa.Column("step", sa.Integer, nullable=False),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("tool_name", sa.String(255), nullable=False),
        sa.Column("args", sa.JSON),
        sa.Column("fingerprint", sa.String(64)),
        sa.Column("state", sa.String(32), nullable=False),
        sa.Column("requires_approval", sa.Boolean, nullable=False),
        sa.Column("suspend_payload", sa.JSON),
        sa.Column("resume_data", sa.JSON),
        sa.Column("result", sa.JSON),
        sa.Column("is_error", sa.Boolean, nullable=False),
        sa.Column("decision", sa.String(16)),
        sa.Column("decided_by", sa.String(255)),
        sa.Column("decided_at", TZ),
        sa.Column("reason", sa.Text),
        sa.Column("child_run_id", sa.String(64)),
        sa.Column("child_tool_call_id", sa.String(255)),
        sa.Column("shown_tool_name", sa.String(255)),
        sa.Column("shown_args", sa.JSON),
        sa.Column("resume_schema", sa.JSON),
        sa.Column("created_at", TZ, nullable=False),
        sa.Column("updated_at", TZ, nullable=False),
        sa.Column("suspended_at", TZ),
        sa.UniqueConstraint("run_id", "tool_call_id", name="uq_tool_calls_run_call"),
    )
    op.create_index("ix_tool_calls_thread_state", "tool_calls", ["thread_id", "state"])
    op.create_index("ix_tool_calls_run_state", "tool_calls", ["run_id", "state"])
    op.create_table(
        "audit",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.String(64), nullable=False),
        sa.Column("tool_call_id", sa.String(255), nullable=False),
        sa.Column("tool_name", sa.String(255), nullable=False),
        sa.Column("action", sa.String(32), nullable=False),
        sa.Column("actor", sa.String(255)),
        sa.Column("detail", sa.Text),
        sa.Column("at", TZ, nullable=False),
    )


def downgrade() -> None:
    for table in ("audit", "tool_calls", "messages", "runs", "threads"):
        op.drop_table(table)
