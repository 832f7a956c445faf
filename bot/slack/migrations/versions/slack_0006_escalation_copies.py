"""Slack adapter: a copy of an approval message may be in another channel than the first (an escalation's
DM to a group member, or its post in a named channel), and says whom the escalation posted it to.

Revision ID: slack_0006_escalation_copies
Revises: slack_0005_answer_feedback
"""

import sqlalchemy as sa
from alembic import op

revision = "slack_0006_escalation_copies"
down_revision = "slack_0005_answer_feedback"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("slack_tool_call_message_copies") as copies:
        copies.add_column(sa.Column("channel", sa.String(32)))
        copies.add_column(sa.Column("escalated_to", sa.String(32)))


def downgrade() -> None:
    with op.batch_alter_table("slack_tool_call_message_copies") as copies:
        copies.drop_column("escalated_to")
        copies.drop_column("channel")
