"""The users who opened the App Home, and what was last published for them.

Revision ID: slack_0002_home_views
Revises: slack_0001
"""

import sqlalchemy as sa
from alembic import op

revision = "slack_0002_home_views"
down_revision = "slack_0001"
branch_labels = None
depends_on = None

TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "slack_home_views",
        sa.Column("user_id", sa.String(32), primary_key=True),
        sa.Column("digest", sa.String(64)),
        sa.Column("opened_at", TZ, nullable=False),
        sa.Column("published_at", TZ),
    )


def downgrade() -> None:
    op.drop_table("slack_home_views")
