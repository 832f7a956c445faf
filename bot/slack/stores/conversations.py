"""Conversations (`slack_conversations`): the threads the bot takes part in, and who started each."""

from __future__ import annotations

from memory.tables import utcnow

from ..tables import SlackConversationRow
from ..threads import SlackThread
from ._table_store import TableStore


class Conversations(TableStore):
    """The threads the bot takes part in."""

    async def start(self, thread: SlackThread, user: str) -> SlackConversationRow:
        """Remember that the bot takes part in `thread` (idempotent); the first user to start it owns it."""
        statement = (
            self._insert(SlackConversationRow)
            .values(
                thread_id=thread.thread_id,
                team_id=thread.team_id,
                channel=thread.channel,
                thread_ts=thread.thread_ts,
                started_by=user,
                created_at=utcnow(),
            )
            .on_conflict_do_nothing(index_elements=["thread_id"])
        )
        async with self._writing() as session:
            await session.execute(statement)
            return await session.get(SlackConversationRow, thread.thread_id)

    async def get(self, thread: SlackThread) -> SlackConversationRow | None:
        """The conversation held in `thread`, or None if the bot takes no part in it."""
        async with self._reading() as session:
            return await session.get(SlackConversationRow, thread.thread_id)
