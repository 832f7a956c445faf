"""Slack adapter: an escalation's post to a person or channel is recorded before it is posted
(`slack_escalation_posts`), so a post whose answer was lost is looked for, not posted twice, and its copy
shows the decision like every other.

Revision ID: slack_0008_escalation_posts
Revises: slack_0007_conversation_language
"""

import sqlalchemy as sa
from alembic import op

revision = "slack_0008_escalation_posts"
down_revision = "slack_0007_conversation_language"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "slack_escalation_posts",
        sa.Column(
            "message_id",
            sa.String(64),
            sa.ForeignKey("slack_tool_call_messages.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("escalated_to", sa.String(32), primary_key=True),
        sa.Column("tried_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("slack_escalation_posts")
