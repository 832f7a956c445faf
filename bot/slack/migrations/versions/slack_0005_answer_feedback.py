"""Slack adapter: thumbs up / down on the agent's answers, one row per run and person.

Revision ID: slack_0005_answer_feedback
Revises: slack_0004_turn_queue
"""

import sqlalchemy as sa
from alembic import op

revision = "slack_0005_answer_feedback"
down_revision = "slack_0004_turn_queue"
branch_labels = None
depends_on = None

TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "slack_answer_feedback",
        sa.Column("run_id", sa.String(64), primary_key=True),
        sa.Column("user_id", sa.String(32), primary_key=True),
        sa.Column("rating", sa.String(8), nullable=False),
        sa.Column("tool_names", sa.JSON(), nullable=False),
        sa.Column("thread_id", sa.String(255), nullable=False),
        sa.Column("channel", sa.String(32), nullable=False),
        sa.Column("message_ts", sa.String(32), nullable=False),
        sa.Column("created_at", TZ, nullable=False),
        sa.Column("updated_at", TZ, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("slack_answer_feedback")
