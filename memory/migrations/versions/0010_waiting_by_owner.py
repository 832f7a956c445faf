"""Indexes for a thread's and a user's page of waiting runs at scale: the runs of one thread (or one
user) and one agent in the page's order (newest first, tie-break `id`), so the page of 50 comes off the
index and its total counts at most `SUSPENDED_RUNS_COUNTED_AHEAD` past it, however many runs that
thread or user has waiting (a user with 1,000 waiting runs had them all read and sorted for each page).

Revision ID: 0010_waiting_by_owner
Revises: 0009_interrupted_calls
"""

from alembic import op

revision = "0010_waiting_by_owner"
down_revision = "0009_interrupted_calls"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_runs_resource_agent_suspended", "runs", ["resource_id", "agent_id", "suspended_at", "id"])
    op.create_index("ix_runs_thread_agent_suspended", "runs", ["thread_id", "agent_id", "suspended_at", "id"])


def downgrade() -> None:
    op.drop_index("ix_runs_thread_agent_suspended", "runs")
    op.drop_index("ix_runs_resource_agent_suspended", "runs")
