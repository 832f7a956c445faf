"""A stored user message names the front end's message it came from (`messages.source_id`, e.g. a Slack
message's ts), unique per thread: a thread message is taken by one run or one decision, once, so a process
that stalled past its lease while another answered the message stores nothing of its own answer.

Revision ID: 0016_message_sources
Revises: 0015_delegations
"""

import sqlalchemy as sa
from alembic import op

revision = "0016_message_sources"
down_revision = "0015_delegations"
branch_labels = None
depends_on = None


# Plain ALTER TABLE, not a batch (see 0014): a batch on SQLite copies `messages` into a new table.


def upgrade() -> None:
    op.add_column("messages", sa.Column("source_id", sa.String(255)))
    op.create_index("uq_messages_thread_source", "messages", ["thread_id", "source_id"], unique=True)


def downgrade() -> None:
    op.drop_index("uq_messages_thread_source", "messages")
    op.drop_column("messages", "source_id")
