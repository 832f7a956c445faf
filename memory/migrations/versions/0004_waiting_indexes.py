"""Indexes for the queries about waiting calls at scale: the newest-first page of an agent's suspended runs
(with the order's tie-break `id`, so the page needs no sort of its own), a user's suspended runs, and the
expiry sweep's calls waiting since before a time.

Revision ID: 0004_waiting_indexes
Revises: 0003_policies
"""

from alembic import op

revision = "0004_waiting_indexes"
down_revision = "0003_policies"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_runs_agent_suspended", "runs", ["agent_id", "suspended_at", "id"])
    op.create_index("ix_runs_resource_status", "runs", ["resource_id", "status"])
    op.create_index("ix_tool_calls_agent_state_since", "tool_calls", ["agent_id", "state", "suspended_at"])


def downgrade() -> None:
    op.drop_index("ix_tool_calls_agent_state_since", "tool_calls")
    op.drop_index("ix_runs_resource_status", "runs")
    op.drop_index("ix_runs_agent_suspended", "runs")
