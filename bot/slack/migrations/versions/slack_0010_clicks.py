"""Slack adapter: button clicks recorded before their ack (`slack_clicks`), so a click acknowledged and then
lost with its replica is carried out by another.

Revision ID: slack_0010_clicks
Revises: slack_0009_work_notices
"""

import sqlalchemy as sa
from alembic import op

revision = "slack_0010_clicks"
down_revision = "slack_0009_work_notices"
branch_labels = None
depends_on = None

TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "slack_clicks",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("received_at", TZ, nullable=False),
        sa.Column("action_id", sa.String(255), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("holder", sa.String(64), nullable=True),
        sa.Column("taken_at", TZ, nullable=False),
        sa.Column("tries", sa.Integer(), nullable=False),
        sa.Column("done_at", TZ, nullable=True),
    )
    op.create_index("ix_slack_clicks_open", "slack_clicks", ["done_at", "taken_at"])


def downgrade() -> None:
    op.drop_index("ix_slack_clicks_open", table_name="slack_clicks")
    op.drop_table("slack_clicks")
