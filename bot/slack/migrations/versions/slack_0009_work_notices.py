"""Slack adapter: PostgreSQL tells every listening replica when an event is recorded or a waiting call's
message is (`NOTIFY bot_work`, see `memory._notices`), so the queue's sweep and the Slack recovery pass of an
idle replica sleep until there is something to look after. Nothing on SQLite, whose sweeps poll.

Revision ID: slack_0009_work_notices
Revises: slack_0008_escalation_posts
"""

from alembic import op

revision = "slack_0009_work_notices"
down_revision = "slack_0008_escalation_posts"
branch_labels = None
depends_on = None

_TABLES = ("slack_events", "slack_tool_call_messages")


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(
        "CREATE OR REPLACE FUNCTION slack_work_notice() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN PERFORM pg_notify('bot_work', TG_TABLE_NAME); RETURN NULL; END $$"
    )
    for table in _TABLES:
        op.execute(
            f"CREATE TRIGGER {table}_work_notice AFTER INSERT ON {table} "
            "FOR EACH STATEMENT EXECUTE FUNCTION slack_work_notice()"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for table in _TABLES:
        op.execute(f"DROP TRIGGER IF EXISTS {table}_work_notice ON {table}")
    op.execute("DROP FUNCTION IF EXISTS slack_work_notice()")
