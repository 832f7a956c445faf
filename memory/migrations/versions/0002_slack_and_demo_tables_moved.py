"""The Slack adapter's and the demo's tables moved to their own packages' migrations.

In v0.1.0 this revision created `slack_events`, `slack_conversations`, `slack_tool_call_messages`,
`demo_records` and `demo_refunds` in every database. Those tables now belong to `bot/slack/migrations`
and `bot/demo/migrations`, whose first revisions create them, or adopt them as they are in a
database made by v0.1.0. This revision stays so that such a database, whose `alembic_version`
says 0002, has a known place in the runtime's history; it changes nothing.

Revision ID: 0002
Revises: 0001
"""

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
