"""A suspended call whose tool keeps live state in one process (an MCP server's question, answered while
its `tools/call` stays open) names that process: `tool_calls.held_by`, the owner whose lease guards it.

Revision ID: 0007_live_questions
Revises: 0006_call_previews
"""

import sqlalchemy as sa
from alembic import op

revision = "0007_live_questions"
down_revision = "0006_call_previews"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tool_calls") as tool_calls:
        tool_calls.add_column(sa.Column("held_by", sa.String(255)))


def downgrade() -> None:
    with op.batch_alter_table("tool_calls") as tool_calls:
        tool_calls.drop_column("held_by")
