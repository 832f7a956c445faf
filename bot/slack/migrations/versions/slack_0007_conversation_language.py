"""Slack adapter: a conversation keeps the language of the bot's words in it (its starter's, fixed when the
bot first writes there), so a thread never switches language halfway.

Revision ID: slack_0007_conversation_language
Revises: slack_0006_escalation_copies
"""

import sqlalchemy as sa
from alembic import op

revision = "slack_0007_conversation_language"
down_revision = "slack_0006_escalation_copies"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("slack_conversations") as conversations:
        conversations.add_column(sa.Column("language", sa.String(16), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("slack_conversations") as conversations:
        conversations.drop_column("language")
