"""Slack adapter and demo tables: handled events, conversations, tool-call messages, demo records and refunds.

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "slack_events",
        sa.Column("event_id", sa.String(64), primary_key=True),
        sa.Column("team_id", sa.String(32)),
        sa.Column("received_at", TZ, nullable=False),
    )
    op.create_table(
        "slack_conversations",
        sa.Column("thread_id", sa.String(255), primary_key=True),
        sa.Column("team_id", sa.String(32), nullable=False),
        sa.Column("channel", sa.String(32), nullable=False),
        sa.Column("thread_ts", sa.String(32), nullable=False),
        sa.Column("started_by", sa.String(32), nullable=False),
        sa.Column("created_at", TZ, nullable=False),
    )
    op.create_table(
        "slack_tool_call_messages",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("run_id", sa.String(64), nullable=False),
        sa.Column("tool_call_id", sa.String(255), nullable=False),
        sa.Column("tool_name", sa.String(255), nullable=False),
        sa.Column("args", sa.JSON()),
        sa.Column("thread_id", sa.String(255), nullable=False),
        sa.Column("team_id", sa.String(32), nullable=False),
        sa.Column("channel", sa.String(32), nullable=False),
        sa.Column("thread_ts", sa.String(32), nullable=False),
        sa.Column("ts", sa.String(32)),
        sa.Column("requester", sa.String(32), nullable=False),
        sa.Column("request_text", sa.Text()),
        sa.Column("closed_at", TZ),
        sa.Column("created_at", TZ, nullable=False),
    )
    op.create_index("ix_slack_tool_call_messages_call", "slack_tool_call_messages", ["run_id", "tool_call_id"])
    op.create_index("ix_slack_tool_call_messages_thread", "slack_tool_call_messages", ["thread_id", "closed_at"])
    op.create_table(
        "demo_records",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("title", sa.String(255), nullable=False),
        sa.Column("created_at", TZ, nullable=False),
    )
    op.create_table(
        "demo_refunds",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("order_id", sa.String(64), nullable=False),
        sa.Column("amount", sa.Numeric(12, 2), nullable=False),
        sa.Column("reason", sa.Text()),
        sa.Column("created_at", TZ, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("demo_refunds")
    op.drop_table("demo_records")
    op.drop_index("ix_slack_tool_call_messages_thread", "slack_tool_call_messages")
    op.drop_index("ix_slack_tool_call_messages_call", "slack_tool_call_messages")
    op.drop_table("slack_tool_call_messages")
    op.drop_table("slack_conversations")
    op.drop_table("slack_events")
