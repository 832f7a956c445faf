"""The Slack adapter's tables: handled events, conversations, the messages that show waiting tool calls.

A database made by v0.1.0 already has them (its runtime revision 0002 created them, with this same
shape): they are adopted as they are, and only the missing ones are created.

Revision ID: slack_0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "slack_0001"
down_revision = None
branch_labels = None
depends_on = None

TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    existing = set(sa.inspect(op.get_bind()).get_table_names())
    if "slack_events" not in existing:
        op.create_table(
            "slack_events",
            sa.Column("event_id", sa.String(64), primary_key=True),
            sa.Column("team_id", sa.String(32)),
            sa.Column("received_at", TZ, nullable=False),
        )
    if "slack_conversations" not in existing:
        op.create_table(
            "slack_conversations",
            sa.Column("thread_id", sa.String(255), primary_key=True),
            sa.Column("team_id", sa.String(32), nullable=False),
            sa.Column("channel", sa.String(32), nullable=False),
            sa.Column("thread_ts", sa.String(32), nullable=False),
            sa.Column("started_by", sa.String(32), nullable=False),
            sa.Column("created_at", TZ, nullable=False),
        )
    if "slack_tool_call_messages" not in existing:
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


def downgrade() -> None:
    op.drop_index("ix_slack_tool_call_messages_thread", "slack_tool_call_messages")
    op.drop_index("ix_slack_tool_call_messages_call", "slack_tool_call_messages")
    op.drop_table("slack_tool_call_messages")
    op.drop_table("slack_conversations")
    op.drop_table("slack_events")
