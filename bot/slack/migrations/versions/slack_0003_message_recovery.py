"""Slack messages of waiting calls: which wait each shows, whether it was interrupted, who is posting it,
and the copies Slack holds of it (so the recovery can post what was never posted and update every copy).

Revision ID: slack_0003_message_recovery
Revises: slack_0002_home_views
"""

import sqlalchemy as sa
from alembic import op

revision = "slack_0003_message_recovery"
down_revision = "slack_0002_home_views"
branch_labels = None
depends_on = None

TZ = sa.DateTime(timezone=True)
TABLE = "slack_tool_call_messages"


def upgrade() -> None:
    with op.batch_alter_table(TABLE) as table:
        table.add_column(sa.Column("waiting_since", TZ))
        table.add_column(sa.Column("interrupted", sa.Boolean(), nullable=False, server_default=sa.false()))
        table.add_column(sa.Column("post_claimed_at", TZ))
        table.add_column(sa.Column("post_attempts", sa.Integer(), nullable=False, server_default="0"))
        table.add_column(sa.Column("maybe_copies", sa.Boolean(), nullable=False, server_default=sa.false()))
    op.create_index("ix_slack_tool_call_messages_wait", TABLE, ["run_id", "tool_call_id", "waiting_since"], unique=True)
    op.create_index("ix_slack_tool_call_messages_unposted", TABLE, ["ts", "closed_at"])
    op.create_table(
        "slack_tool_call_message_copies",
        sa.Column("message_id", sa.String(64), sa.ForeignKey(f"{TABLE}.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("ts", sa.String(32), primary_key=True),
        sa.Column("created_at", TZ, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("slack_tool_call_message_copies")
    op.drop_index("ix_slack_tool_call_messages_unposted", TABLE)
    op.drop_index("ix_slack_tool_call_messages_wait", TABLE)
    with op.batch_alter_table(TABLE) as table:
        for column in ("maybe_copies", "post_attempts", "post_claimed_at", "interrupted", "waiting_since"):
            table.drop_column(column)
