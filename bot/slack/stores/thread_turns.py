"""Thread leases (`slack_thread_turns`): which replica takes the turns of a thread now, kept by a heartbeat.

One turn at a time per thread, across replicas: a replica takes a thread's lease before it answers the
thread's queued messages (`EventLog.start_next`), keeps it fresh while it works, and lets go when none
is left, in the statement that finds none (`SlackStores`). A lease whose heartbeat went stale (its
holder crashed) is taken over.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import Delete, Insert, bindparam, delete, exists, update

from memory import Storage, retried_while_away
from memory.tables import utcnow

from ..tables import SlackEventRow, SlackThreadTurnRow
from ._table_store import TableStore


@retried_while_away
class ThreadTurns(TableStore):
    """Who holds the turn of each thread the bot is answering."""

    def __init__(self, storage: Storage):
        super().__init__(storage)
        insert = self._insert(SlackThreadTurnRow).values(
            thread_id=bindparam("b_thread"), holder=bindparam("b_holder"), heartbeat_at=bindparam("b_now")
        )
        self.taking = insert.on_conflict_do_update(
            index_elements=["thread_id"],
            set_={"holder": insert.excluded.holder, "heartbeat_at": insert.excluded.heartbeat_at},
            where=SlackThreadTurnRow.heartbeat_at < bindparam("b_stale"),
        )

    taking: Insert
    """The INSERT of `take` (`b_thread`, `b_holder`, `b_now`, `b_stale`), also run with a message's start
    (`EventLog.take_and_start`)."""

    async def take(self, thread_id: str, holder: str, *, stale_after: float) -> bool:
        """Take `thread_id`'s turn for `holder`: free, or held by someone whose heartbeat is older than
        `stale_after` seconds (a crashed replica). False while another holder is alive (or `holder` itself,
        in another of its tasks).

        One statement, an INSERT whose conflict takes the row over only if it is stale. Tried again after a
        lost connection: a try that had landed makes the second find the lease alive (False), and the lease,
        held by no worker, goes stale for the sweep (`TurnQueue`) to take the thread over."""
        now = utcnow()
        values = {"b_thread": thread_id, "b_holder": holder, "b_now": now}
        async with self._one_statement(idempotent=True) as connection:
            result = await connection.execute(self.taking, {**values, "b_stale": now - timedelta(seconds=stale_after)})
        return result.rowcount == 1

    async def keep(self, thread_id: str, holder: str) -> bool:
        """Refresh `holder`'s heartbeat on `thread_id`; False if the thread is no longer theirs."""
        async with self._one_statement(idempotent=True) as connection:
            result = await connection.execute(_KEEP, {"b_thread": thread_id, "b_holder": holder, "b_now": utcnow()})
        return result.rowcount == 1

    async def release(self, thread_id: str, holder: str) -> None:
        """Let go of `thread_id` (if `holder` still has it)."""
        async with self._one_statement(idempotent=True) as connection:
            await connection.execute(
                delete(SlackThreadTurnRow).where(
                    SlackThreadTurnRow.thread_id == thread_id, SlackThreadTurnRow.holder == holder
                )
            )

    async def release_if_idle(self, thread_id: str, holder: str) -> bool:
        """Let go of `thread_id` if `holder` has it and no message of the thread waits, in one statement:
        a message queued meanwhile keeps the lease, so its receiver (who found the thread busy) is never
        left without a worker. False if the lease stays (or was not `holder`'s). The one read of another
        table: whether a message of the thread waits (`slack_events`)."""
        async with self._one_statement(idempotent=True) as connection:
            result = await connection.execute(_RELEASE_IF_IDLE, {"b_thread": thread_id, "b_holder": holder})
        return result.rowcount == 1

    def releasing_if_idle(self, thread_id: str, holder: str, *, besides: str) -> Delete:
        """The statement of `release_if_idle` that does not count the message `besides` as waiting: the one
        whose turn is marked done in the same statement (`SlackStores.finish_turn`; on PostgreSQL its parts
        see the queue as it was before the mark)."""
        return delete(SlackThreadTurnRow).where(
            SlackThreadTurnRow.thread_id == thread_id,
            SlackThreadTurnRow.holder == holder,
            ~exists().where(
                SlackEventRow.thread_id == thread_id, SlackEventRow.done_at.is_(None), SlackEventRow.event_id != besides
            ),
        )


# The statements of every turn, built once (see `events.py`).
_KEEP = (
    update(SlackThreadTurnRow)
    .where(SlackThreadTurnRow.thread_id == bindparam("b_thread"), SlackThreadTurnRow.holder == bindparam("b_holder"))
    .values(heartbeat_at=bindparam("b_now"))
)
_RELEASE_IF_IDLE = delete(SlackThreadTurnRow).where(
    SlackThreadTurnRow.thread_id == bindparam("b_thread"),
    SlackThreadTurnRow.holder == bindparam("b_holder"),
    ~exists().where(SlackEventRow.thread_id == bindparam("b_thread"), SlackEventRow.done_at.is_(None)),
)
