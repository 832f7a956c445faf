"""Escalation before expiry: a policy may name an escalation target (`escalate_to`, a user-group or
channel ID) and a delay (`escalate_after`, seconds); a waiting call records when it was escalated
(`escalated_at`), set by the one conditional UPDATE that lets one replica escalate it.

Revision ID: 0012_escalation
Revises: 0011_standing_grants
"""

import sqlalchemy as sa
from alembic import op

revision = "0012_escalation"
down_revision = "0011_standing_grants"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tool_policies") as policies:
        policies.add_column(sa.Column("escalate_to", sa.String(32)))
        policies.add_column(sa.Column("escalate_after", sa.Integer()))
    with op.batch_alter_table("tool_calls") as calls:
        calls.add_column(sa.Column("escalated_at", sa.DateTime(timezone=True)))


def downgrade() -> None:
    with op.batch_alter_table("tool_calls") as calls:
        calls.drop_column("escalated_at")
    with op.batch_alter_table("tool_policies") as policies:
        policies.drop_column("escalate_after")
        policies.drop_column("escalate_to")
