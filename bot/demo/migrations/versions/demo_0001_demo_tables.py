"""The demo agent's tables: the records it lists and deletes, the refunds it issues.

A database made by v0.1.0 already has them (its runtime revision 0002 created them, with this same
shape): they are adopted as they are, and only the missing ones are created.

Revision ID: demo_0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "demo_0001"
down_revision = None
branch_labels = None
depends_on = None

TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    existing = set(sa.inspect(op.get_bind()).get_table_names())
    if "demo_records" not in existing:
        op.create_table(
            "demo_records",
            sa.Column("id", sa.Integer(), primary_key=True),
            sa.Column("title", sa.String(255), nullable=False),
            sa.Column("created_at", TZ, nullable=False),
        )
    if "demo_refunds" not in existing:
        op.create_table(
            "demo_refunds",
            sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
            sa.Column("order_id", sa.String(64), nullable=False),
            sa.Column("amount", sa.Numeric(12, 2), nullable=False),
            sa.Column("reason", sa.Text()),
            sa.Column("created_at", TZ, nullable=False),
        )


def downgrade() -> None:
    op.drop_table("demo_refunds")
    op.drop_table("demo_records")
