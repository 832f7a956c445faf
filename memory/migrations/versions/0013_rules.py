"""Rules: a tool policy holds ordered rules (`tool_policies.rules`, JSON), and a call keeps the rule that
decided it when it was proposed (`tool_calls.rule`, JSON).

Revision ID: 0013_rules
Revises: 0012_escalation
"""

import sqlalchemy as sa
from alembic import op

revision = "0013_rules"
down_revision = "0012_escalation"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tool_policies") as policies:
        policies.add_column(sa.Column("rules", sa.JSON()))
    with op.batch_alter_table("tool_calls") as calls:
        calls.add_column(sa.Column("rule", sa.JSON()))


def downgrade() -> None:
    with op.batch_alter_table("tool_calls") as calls:
        calls.drop_column("rule")
    with op.batch_alter_table("tool_policies") as policies:
        policies.drop_column("rules")
