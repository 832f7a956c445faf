"""A run records which calls' previews are starting before it runs them (`runs.previews_started`), so a
process that takes the run over after a crash mid-preview does not run the same preview again.

Revision ID: 0014_previews_started
Revises: 0013_rules
"""

import sqlalchemy as sa
from alembic import op

revision = "0014_previews_started"
down_revision = "0013_rules"
branch_labels = None
depends_on = None


# Plain ALTER TABLE, not a batch: on SQLite a batch drop copies `runs` into a new table, and dropping the
# old one would cascade to every tool call and message (`ON DELETE CASCADE`). SQLite has had DROP COLUMN
# since 3.35.


def upgrade() -> None:
    op.add_column("runs", sa.Column("previews_started", sa.JSON()))


def downgrade() -> None:
    op.drop_column("runs", "previews_started")
