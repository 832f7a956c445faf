"""Tool policies, and the audit trail's channel, argument fingerprint and policy version.

Revision ID: 0003_policies
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003_policies"
down_revision = "0002"
branch_labels = None
depends_on = None

TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "tool_policies",
        sa.Column("tool_name", sa.String(255), primary_key=True),
        sa.Column("mode", sa.String(32), nullable=False),
        sa.Column("approvers", sa.JSON(), nullable=False),
        sa.Column("self_approval", sa.Boolean(), nullable=False),
        sa.Column("expires_after", sa.Integer()),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("updated_by", sa.String(255)),
        sa.Column("updated_at", TZ, nullable=False),
    )
    with op.batch_alter_table("audit") as audit:
        audit.add_column(sa.Column("via", sa.String(16)))
        audit.add_column(sa.Column("args_fingerprint", sa.String(64)))
        audit.add_column(sa.Column("policy_version", sa.Integer()))
    op.create_index("ix_audit_at", "audit", ["at"])
    op.create_index("ix_audit_tool_at", "audit", ["tool_name", "at"])


def downgrade() -> None:
    op.drop_index("ix_audit_tool_at", "audit")
    op.drop_index("ix_audit_at", "audit")
    with op.batch_alter_table("audit") as audit:
        audit.drop_column("policy_version")
        audit.drop_column("args_fingerprint")
        audit.drop_column("via")
    op.drop_table("tool_policies")
