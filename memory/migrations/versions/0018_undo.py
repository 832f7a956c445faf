"""Undo: a policy's undo window (`tool_policies.undo_seconds`; None: the default 300 s, 0: no undo), and a
call that ran records its undo (`tool_calls.undo_state`, `undone_by`, `undone_at`), claimed by the one
conditional UPDATE that lets one person undo it once.

Revision ID: 0018_undo
Revises: 0017_work_notices
"""

import sqlalchemy as sa
from alembic import op

revision = "0018_undo"
down_revision = "0017_work_notices"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tool_policies") as policies:
        policies.add_column(sa.Column("undo_seconds", sa.Integer()))
    with op.batch_alter_table("tool_calls") as calls:
        calls.add_column(sa.Column("undo_state", sa.String(16)))
        calls.add_column(sa.Column("undone_by", sa.String(255)))
        calls.add_column(sa.Column("undone_at", sa.DateTime(timezone=True)))


def downgrade() -> None:
    with op.batch_alter_table("tool_calls") as calls:
        calls.drop_column("undone_at")
        calls.drop_column("undone_by")
        calls.drop_column("undo_state")
    with op.batch_alter_table("tool_policies") as policies:
        policies.drop_column("undo_seconds")
