"""A tool call keeps what its tool's dry run (`preview=`) said before its approval was posted.

Revision ID: 0006_call_previews
Revises: 0005_audit_changes
"""

import sqlalchemy as sa
from alembic import op

revision = "0006_call_previews"
down_revision = "0005_audit_changes"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tool_calls") as calls:
        calls.add_column(sa.Column("preview", sa.JSON()))


def downgrade() -> None:
    with op.batch_alter_table("tool_calls") as calls:
        calls.drop_column("preview")
