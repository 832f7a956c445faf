"""Thread leases (`slack_thread_turns`): which replica takes the turns of a thread now, kept by a heartbeat.

One turn at a time per thread, across replicas: a replica takes a thread's lease before it answers the
thread's queued messages (`EventLog.start_next`), keeps it fresh while it works, and lets go when none
is left, in the transaction that finds none (`SlackStores`). A lease whose heartbeat went stale (its
holder crashed) is taken over.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import delete, exists, update
from sqlalchemy.ext.asyncio import AsyncConnection

from memory.tables import utcnow

from ..tables import SlackEventRow, SlackThreadTurnRow
from ._table_store import TableStore


class ThreadTurns(TableStore):
    """Who holds the turn of each thread the bot is answering."""

    async def take(
        self, thread_id: str, holder: str, *, stale_after: float, connection: AsyncConnection | None = None
    ) -> bool:
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
        async with self._writing(connection) as connection:
            if (await connection.execute(take)).rowcount == 1:
                return True
            return (await connection.execute(take_over)).rowcount == 1

    async def keep(self, thread_id: str, holder: str) -> bool:
        """Refresh `holder`'s heartbeat on `thread_id`; False if the thread is no longer theirs."""
        async with self._writing() as connection:
            result = await connection.execute(
                update(SlackThreadTurnRow)
                .where(SlackThreadTurnRow.thread_id == thread_id, SlackThreadTurnRow.holder == holder)
                .values(heartbeat_at=utcnow())
            )
        return result.rowcount == 1

    async def release(self, thread_id: str, holder: str) -> None:
        """Let go of `thread_id` (if `holder` still has it)."""
        async with self._writing() as connection:
            await connection.execute(
                delete(SlackThreadTurnRow).where(
                    SlackThreadTurnRow.thread_id == thread_id, SlackThreadTurnRow.holder == holder
                )
            )

    async def release_if_idle(self, thread_id: str, holder: str, *, connection: AsyncConnection | None = None) -> bool:
        """Let go of `thread_id` if `holder` has it and no message of the thread waits, in one statement:
        a message queued meanwhile keeps the lease, so its receiver (who found the thread busy) is never
        left without a worker. False if the lease stays (or was not `holder`'s). The one read of another
        table: whether a message of the thread waits (`slack_events`)."""
        waiting = exists().where(SlackEventRow.thread_id == thread_id, SlackEventRow.done_at.is_(None))
        async with self._writing(connection) as connection:
            result = await connection.execute(
                delete(SlackThreadTurnRow).where(
                    SlackThreadTurnRow.thread_id == thread_id, SlackThreadTurnRow.holder == holder, ~waiting
                )
            )
        return result.rowcount == 1
