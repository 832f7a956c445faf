"""An interrupted call (its tool started and no result was stored, so it waits for a human again) is
marked by its own column, `tool_calls.interrupted`, instead of a key `{"interrupted": true}` inside its
`suspend_payload`. The upgrade moves the key of every stored call into the column; the downgrade puts
it back.

Revision ID: 0009_interrupted_calls
Revises: 0008_approval_quorum
"""

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0009_interrupted_calls"
down_revision = "0008_approval_quorum"
branch_labels = None
depends_on = None

CALLS = sa.table(
    "tool_calls",
    sa.column("id", sa.Integer),
    sa.column("suspend_payload", sa.JSON),
    sa.column("interrupted", sa.Boolean),
)


def _marked_payloads(connection: sa.Connection) -> list[tuple[int, Any]]:
    """(id, payload) of the calls whose payload might hold the key (the JSON's text names it)."""
    rows = connection.execute(
        sa.select(CALLS.c.id, CALLS.c.suspend_payload).where(
            sa.cast(CALLS.c.suspend_payload, sa.Text).like('%"interrupted"%')
        )
    )
    return [(row.id, row.suspend_payload) for row in rows]


def upgrade() -> None:
    with op.batch_alter_table("tool_calls") as calls:
        calls.add_column(sa.Column("interrupted", sa.Boolean(), nullable=False, server_default=sa.false()))
    connection = op.get_bind()
    for call_id, payload in _marked_payloads(connection):
        if isinstance(payload, dict) and payload.get("interrupted") is True:
            rest = {key: value for key, value in payload.items() if key != "interrupted"}
            connection.execute(
                sa.update(CALLS).where(CALLS.c.id == call_id).values(interrupted=True, suspend_payload=rest)
            )


def downgrade() -> None:
    connection = op.get_bind()
    rows = connection.execute(sa.select(CALLS.c.id, CALLS.c.suspend_payload).where(CALLS.c.interrupted))
    for call_id, payload in [(row.id, row.suspend_payload) for row in rows]:
        marked = {"interrupted": True, **(payload if isinstance(payload, dict) else {})}
        connection.execute(sa.update(CALLS).where(CALLS.c.id == call_id).values(suspend_payload=marked))
    with op.batch_alter_table("tool_calls") as calls:
        calls.drop_column("interrupted")
