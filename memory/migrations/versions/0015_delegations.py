"""Delegation: an approver hands their approvals to someone else until a time (`delegations`); a decision
names whom its decider stood in for (`tool_calls.decided_for`), and so does its audit line
(`audit.on_behalf_of`).

Revision ID: 0015_delegations
Revises: 0014_previews_started
"""

import sqlalchemy as sa
from alembic import op

TZ = sa.DateTime(timezone=True)

revision = "0015_delegations"
down_revision = "0014_previews_started"
branch_labels = None
depends_on = None


# Plain ALTER TABLE, not a batch (see 0014): a batch on SQLite copies `tool_calls`.


def upgrade() -> None:
    op.add_column("tool_calls", sa.Column("decided_for", sa.String(255)))
    op.add_column("audit", sa.Column("on_behalf_of", sa.String(255)))
    op.create_table(
        "delegations",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("delegator", sa.String(255), nullable=False),
        sa.Column("delegate", sa.String(255), nullable=False),
        sa.Column("created_by", sa.String(255), nullable=False),
        sa.Column("starts_at", TZ, nullable=False),
        sa.Column("ends_at", TZ, nullable=False),
        sa.Column("ended_at", TZ),
        sa.Column("ended_by", sa.String(255)),
    )
    op.create_index("ix_delegations_delegate", "delegations", ["delegate", "ends_at"])


def downgrade() -> None:
    op.drop_index("ix_delegations_delegate", table_name="delegations")
    op.drop_table("delegations")
    op.drop_column("audit", "on_behalf_of")
    op.drop_column("tool_calls", "decided_for")
