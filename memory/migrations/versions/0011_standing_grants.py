"""Standing grants: a policy may allow an approver to grant a tool for a while in one thread
(`tool_policies.grant_seconds`, none by default), and the grants given (`tool_grants`).

Revision ID: 0011_standing_grants
Revises: 0010_waiting_by_owner
"""

import sqlalchemy as sa
from alembic import op

TZ = sa.DateTime(timezone=True)

revision = "0011_standing_grants"
down_revision = "0010_waiting_by_owner"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tool_policies") as policies:
        policies.add_column(sa.Column("grant_seconds", sa.Integer()))
    op.create_table(
        "tool_grants",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("agent_id", sa.String(255), nullable=False),
        sa.Column("tool_name", sa.String(255), nullable=False),
        sa.Column("thread_id", sa.String(255), nullable=False),
        sa.Column("resource_id", sa.String(255)),
        sa.Column("granted_by", sa.String(255), nullable=False),
        sa.Column("run_id", sa.String(64), nullable=False),
        sa.Column("tool_call_id", sa.String(255), nullable=False),
        sa.Column("args_fingerprint", sa.String(64)),
        sa.Column("policy_version", sa.Integer(), nullable=False),
        sa.Column("granted_at", TZ, nullable=False),
        sa.Column("expires_at", TZ, nullable=False),
        sa.Column("revoked_at", TZ),
        sa.Column("revoked_by", sa.String(255)),
    )
    op.create_index("ix_tool_grants_scope", "tool_grants", ["agent_id", "tool_name", "thread_id", "expires_at"])


def downgrade() -> None:
    op.drop_index("ix_tool_grants_scope", table_name="tool_grants")
    op.drop_table("tool_grants")
    with op.batch_alter_table("tool_policies") as policies:
        policies.drop_column("grant_seconds")
