"""The audit trail records changes too: `before` and `after` (a policy change's whole policy, an edit's
arguments), and lines that belong to no run (a policy change) have no run or tool call.

Revision ID: 0005_audit_changes
Revises: 0004_waiting_indexes
"""

import sqlalchemy as sa
from alembic import op

revision = "0005_audit_changes"
down_revision = "0004_waiting_indexes"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("audit") as audit:
        audit.add_column(sa.Column("before", sa.JSON()))
        audit.add_column(sa.Column("after", sa.JSON()))
        audit.alter_column("run_id", existing_type=sa.String(64), nullable=True)
        audit.alter_column("tool_call_id", existing_type=sa.String(255), nullable=True)


def downgrade() -> None:
    op.execute("DELETE FROM audit WHERE run_id IS NULL OR tool_call_id IS NULL")
    with op.batch_alter_table("audit") as audit:
        audit.alter_column("tool_call_id", existing_type=sa.String(255), nullable=False)
        audit.alter_column("run_id", existing_type=sa.String(64), nullable=False)
        audit.drop_column("after")
        audit.drop_column("before")
