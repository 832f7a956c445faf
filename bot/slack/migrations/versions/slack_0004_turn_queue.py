"""Slack adapter: messages queued for their turn (columns of `slack_events`) and per-thread turn leases.

Revision ID: slack_0004_turn_queue
Revises: slack_0003_message_recovery
"""

import sqlalchemy as sa
from alembic import op

revision = "slack_0004_turn_queue"
down_revision = "slack_0003_message_recovery"
branch_labels = None
depends_on = None

TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.add_column("slack_events", sa.Column("thread_id", sa.String(255)))
    op.add_column("slack_events", sa.Column("message_ts", sa.String(32)))
    op.add_column("slack_events", sa.Column("event", sa.JSON()))
    op.add_column("slack_events", sa.Column("bot_user_id", sa.String(32)))
    op.add_column("slack_events", sa.Column("started_at", TZ))
    op.add_column("slack_events", sa.Column("done_at", TZ))
    op.create_index("ix_slack_events_queue", "slack_events", ["thread_id", "done_at", "message_ts"])
    op.create_table(
        "slack_thread_turns",
        sa.Column("thread_id", sa.String(255), primary_key=True),
        sa.Column("holder", sa.String(128), nullable=False),
        sa.Column("heartbeat_at", TZ, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("slack_thread_turns")
    op.drop_index("ix_slack_events_queue", "slack_events")
    with op.batch_alter_table("slack_events") as table:
        for column in ("done_at", "started_at", "bot_user_id", "event", "message_ts", "thread_id"):
            table.drop_column(column)
