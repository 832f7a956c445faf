"""PostgreSQL tells every listening replica when work its sweeps look after is created or moves (`NOTIFY
bot_work`, `memory._notices`): a run's status, a call's state, a tool policy. Statement-level triggers: the
writer pays no round trip, and a transaction that rolls back notifies nobody. Nothing on SQLite, whose sweeps
poll.

Revision ID: 0017_work_notices
Revises: 0016_message_sources
"""

from alembic import op

revision = "0017_work_notices"
down_revision = "0016_message_sources"
branch_labels = None
depends_on = None

_TRIGGERS = {
    "runs": "AFTER INSERT OR UPDATE OF status",
    "tool_calls": "AFTER INSERT OR UPDATE OF state",
    "tool_policies": "AFTER INSERT OR UPDATE OR DELETE",
}


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(
        "CREATE OR REPLACE FUNCTION bot_work_notice() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN PERFORM pg_notify('bot_work', TG_TABLE_NAME); RETURN NULL; END $$"
    )
    for table, when in _TRIGGERS.items():
        op.execute(
            f"CREATE TRIGGER {table}_work_notice {when} ON {table} FOR EACH STATEMENT EXECUTE FUNCTION bot_work_notice()"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for table in _TRIGGERS:
        op.execute(f"DROP TRIGGER IF EXISTS {table}_work_notice ON {table}")
    op.execute("DROP FUNCTION IF EXISTS bot_work_notice()")
