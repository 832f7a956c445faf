"""Four eyes: a policy may require several distinct approvers (`approvals_required`, 1 by default), and
a waiting call keeps the approvals counted so far (`approvals`, `approval_count`).

Revision ID: 0008_approval_quorum
Revises: 0007_live_questions
"""

import sqlalchemy as sa
from alembic import op

revision = "0008_approval_quorum"
down_revision = "0007_live_questions"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tool_policies") as policies:
        policies.add_column(sa.Column("approvals_required", sa.Integer(), nullable=False, server_default="1"))
    with op.batch_alter_table("tool_calls") as calls:
        calls.add_column(sa.Column("approvals", sa.JSON()))
        calls.add_column(sa.Column("approval_count", sa.Integer(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("tool_calls") as calls:
        calls.drop_column("approval_count")
        calls.drop_column("approvals")
    with op.batch_alter_table("tool_policies") as policies:
        policies.drop_column("approvals_required")
