"""Thread leases (`slack_thread_turns`): which replica takes the turns of a thread now, kept by a heartbeat.

One turn at a time per thread, across replicas: a replica takes a thread's lease before it answers the
thread's queued messages (`EventLog.next_queued`), keeps it fresh while it works, and lets go when none
is left. A lease whose heartbeat went stale (its holder crashed) is taken over.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import delete, update

from memory.tables import utcnow

from ..tables import SlackThreadTurnRow
from ._table_store import TableStore


class ThreadTurns(TableStore):
    """Who holds the turn of each thread the bot is answering."""

    async def take(self, thread_id: str, holder: str, *, stale_after: float) -> bool:
        """Take `thread_id`'s turn for `holder`: free, or held by someone whose heartbeat is older than
        `stale_after` seconds (a crashed replica). False while another holder is alive."""
        now = utcnow()
        take = (
            self._insert(SlackThreadTurnRow)
            .values(thread_id=thread_id, holder=holder, heartbeat_at=now)
            .on_conflict_do_nothing(index_elements=["thread_id"])
        )
        take_over = (
            update(SlackThreadTurnRow)
            .where(
                SlackThreadTurnRow.thread_id == thread_id,
                SlackThreadTurnRow.heartbeat_at < now - timedelta(seconds=stale_after),
            )
            .values(holder=holder, heartbeat_at=now)
        )
        async with self._writing() as session:
            if (await session.execute(take)).rowcount == 1:
                return True
            return (await session.execute(take_over)).rowcount == 1

    async def keep(self, thread_id: str, holder: str) -> bool:
        """Refresh `holder`'s heartbeat on `thread_id`; False if the thread is no longer theirs."""
        async with self._writing() as session:
            result = await session.execute(
                update(SlackThreadTurnRow)
                .where(SlackThreadTurnRow.thread_id == thread_id, SlackThreadTurnRow.holder == holder)
                .values(heartbeat_at=utcnow())
            )
        return result.rowcount == 1

    async def release(self, thread_id: str, holder: str) -> None:
        """Let go of `thread_id` (if `holder` still has it)."""
        async with self._writing() as session:
            await session.execute(
                delete(SlackThreadTurnRow).where(
                    SlackThreadTurnRow.thread_id == thread_id, SlackThreadTurnRow.holder == holder
                )
            )
