"""The emulated workspace, kept: messages, open modals, App Home views.

Revision ID: playground_0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "playground_0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "playground_messages",
        sa.Column("channel", sa.String(64), primary_key=True),
        sa.Column("ts", sa.String(32), primary_key=True),
        sa.Column("user", sa.String(64), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("blocks", sa.JSON(), nullable=False),
        sa.Column("thread_ts", sa.String(32), nullable=True),
        sa.Column("format", sa.String(16), nullable=False),
        sa.Column("streaming", sa.Boolean(), nullable=False),
        sa.Column("edited", sa.Boolean(), nullable=False),
        sa.Column("ephemeral_to", sa.String(64), nullable=True),
    )
    op.create_table(
        "playground_modals",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("user", sa.String(64), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("view", sa.JSON(), nullable=False),
        sa.Column("errors", sa.JSON(), nullable=False),
        sa.Column("hash", sa.String(32), nullable=False),
    )
    op.create_index("ix_playground_modals_user", "playground_modals", ["user"])
    op.create_table(
        "playground_home_views",
        sa.Column("user", sa.String(64), primary_key=True),
        sa.Column("view", sa.JSON(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("playground_home_views")
    op.drop_index("ix_playground_modals_user", table_name="playground_modals")
    op.drop_table("playground_modals")
    op.drop_table("playground_messages")
