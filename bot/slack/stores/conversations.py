"""Conversations (`slack_conversations`): the threads the bot takes part in, and who started each."""

from __future__ import annotations

from sqlalchemy import select

from memory.tables import utcnow

from ..tables import SlackConversationRow
from ..threads import SlackThread
from ._table_store import TableStore


class Conversations(TableStore):
    """The threads the bot takes part in."""

    async def start(self, thread: SlackThread, user: str) -> SlackConversationRow:
        """Remember that the bot takes part in `thread` (idempotent); the first user to start it owns it.
        One statement: an INSERT whose conflict leaves the row as it is and returns it (a row of its own,
        not attached to any session)."""
        insert = self._insert(SlackConversationRow).values(
            thread_id=thread.thread_id,
            team_id=thread.team_id,
            channel=thread.channel,
            thread_ts=thread.thread_ts,
            started_by=user,
            created_at=utcnow(),
        )
        statement = insert.on_conflict_do_update(
            index_elements=["thread_id"], set_={"thread_id": insert.excluded.thread_id}
        ).returning(*SlackConversationRow.__table__.columns)
        async with self._writing() as connection:
            return SlackConversationRow(**(await connection.execute(statement)).one()._mapping)

    async def get(self, thread: SlackThread) -> SlackConversationRow | None:
        """The conversation held in `thread`, or None if the bot takes no part in it."""
        table = SlackConversationRow.__table__
        async with self._reading() as connection:
            row = (await connection.execute(select(table).where(table.c.thread_id == thread.thread_id))).first()
        return SlackConversationRow(**row._mapping) if row else None
