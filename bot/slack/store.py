"""The Slack adapter's reads and writes of its own tables (see `tables.py`).

Each method is one short transaction. Claiming an event is an INSERT that does nothing on conflict,
so two replicas (or a retry) racing for the same event get one winner from the database. Claims that
arrive together are written together, in one transaction (a burst of mentions costs a few commits,
not one each), because the ack waits for them.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, exists, or_, select, tuple_, update
from sqlalchemy.dialects.postgresql import insert as postgres_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from memory import Storage
from memory.tables import utcnow

from .migrations import SCHEMA
from .tables import (
    HomeViewRow,
    SlackConversationRow,
    SlackEventRow,
    SlackThreadTurnRow,
    ToolCallMessageCopyRow,
    ToolCallMessageRow,
)
from .threads import SlackThread


@dataclass(frozen=True, kw_only=True)
class QueuedMessage:
    """A message waiting for (or taking) its turn in a thread."""

    event_id: str
    thread_id: str
    team_id: str
    event: dict[str, Any]
    """What the turn needs of the Slack event (type, user, text, channel, ts, thread_ts, channel_type)."""
    bot_user_id: str | None
    started_at: datetime | None = None
    """When a turn was started on it before: the replica that started it stopped without finishing."""

    @property
    def started(self) -> bool:
        return self.started_at is not None


class SlackStore:
    """Handled events, known conversations, and the messages that show waiting tool calls."""

    def __init__(self, storage: Storage, *, keep_events: timedelta = timedelta(days=1), prune_every: int = 500):
        self.storage = storage
        self.keep_events = keep_events
        """How long a handled event id is kept: Slack retries within minutes, so a day is plenty."""
        self.prune_every = prune_every
        self._claims = 0
        self._waiting_claims: list[tuple[dict[str, Any], asyncio.Future[bool]]] = []
        self._claim_writer: asyncio.Task[None] | None = None

    @asynccontextmanager
    async def _session(self) -> AsyncIterator[AsyncSession]:
        """A transaction on the adapter's tables, created on first use (checked once per process)."""
        await self.storage.migrate(SCHEMA)
        async with self.storage.session() as session:
            yield session

    @asynccontextmanager
    async def _reading(self) -> AsyncIterator[AsyncSession]:
        """A session for reads alone, outside a write transaction (`Storage.read_session`): no write lock
        on SQLite, no BEGIN/COMMIT on PostgreSQL. The turn path's reads use it; what is read and then
        written in one decision stays in `_session`."""
        await self.storage.migrate(SCHEMA)
        async with self.storage.read_session() as session:
            yield session

    def _insert(self, table: Any):
        return sqlite_insert(table) if self.storage.is_sqlite else postgres_insert(table)

    async def claim_event(
        self,
        event_id: str,
        team_id: str | None,
        *,
        thread_id: str | None = None,
        event: dict[str, Any] | None = None,
        bot_user_id: str | None = None,
    ) -> bool:
        """Record `event_id` as handled; False if it already was (a retry, or another replica got it).

        With `thread_id`, the message `event` is queued for its turn in that thread (see `next_queued`).
        """
        values = {
            "event_id": event_id,
            "team_id": team_id,
            "received_at": utcnow(),
            "thread_id": thread_id,
            "message_ts": (event or {}).get("ts") if thread_id else None,
            "event": event if thread_id else None,
            "bot_user_id": bot_user_id if thread_id else None,
        }
        claimed = asyncio.get_running_loop().create_future()
        self._waiting_claims.append((values, claimed))
        if self._claim_writer is None or self._claim_writer.done():
            self._claim_writer = asyncio.create_task(self._write_claims())
        won = await claimed
        self._claims += 1
        if self._claims % self.prune_every == 0:
            await self.prune_events()
        return won

    async def _write_claims(self) -> None:
        """Write every claim waiting now in one transaction; claims that come meanwhile go in the next."""
        while self._waiting_claims:
            batch, self._waiting_claims = self._waiting_claims, []
            first: dict[str, dict[str, Any]] = {}
            for values, _ in batch:
                first.setdefault(values["event_id"], values)
            statement = (
                self._insert(SlackEventRow)
                .values(list(first.values()))
                .on_conflict_do_nothing(index_elements=["event_id"])
                .returning(SlackEventRow.event_id)
            )
            try:
                async with self._session() as session:
                    inserted = set((await session.execute(statement)).scalars())
            except Exception as exc:
                for _, claimed in batch:
                    if not claimed.done():
                        claimed.set_exception(exc)
                continue
            for values, claimed in batch:
                won = values["event_id"] in inserted and first.get(values["event_id"]) is values
                if not claimed.done():
                    claimed.set_result(won)

    async def prune_events(self) -> int:
        """Forget handled events older than `keep_events`; returns how many were forgotten."""
        async with self._session() as session:
            result = await session.execute(
                delete(SlackEventRow).where(SlackEventRow.received_at < utcnow() - self.keep_events)
            )
        return result.rowcount

    # --- messages queued for their turn, one turn at a time per thread --------------------------
    async def claim_thread(self, thread_id: str, holder: str, *, stale_after: float) -> bool:
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
        async with self._session() as session:
            if (await session.execute(take)).rowcount == 1:
                return True
            return (await session.execute(take_over)).rowcount == 1

    async def keep_thread(self, thread_id: str, holder: str) -> bool:
        """Refresh `holder`'s heartbeat on `thread_id`; False if the thread is no longer theirs."""
        async with self._session() as session:
            result = await session.execute(
                update(SlackThreadTurnRow)
                .where(SlackThreadTurnRow.thread_id == thread_id, SlackThreadTurnRow.holder == holder)
                .values(heartbeat_at=utcnow())
            )
        return result.rowcount == 1

    async def release_thread(self, thread_id: str, holder: str) -> bool:
        """Let go of `thread_id`; whether a message of it is still waiting (queued after the last look,
        while the thread was held here: its receiver found the thread busy and left it to us)."""
        async with self._session() as session:
            await session.execute(
                delete(SlackThreadTurnRow).where(
                    SlackThreadTurnRow.thread_id == thread_id, SlackThreadTurnRow.holder == holder
                )
            )
            waiting = await session.scalar(
                select(SlackEventRow.event_id)
                .where(SlackEventRow.thread_id == thread_id, SlackEventRow.done_at.is_(None))
                .limit(1)
            )
        return waiting is not None

    async def next_queued(self, thread_id: str) -> QueuedMessage | None:
        """The oldest message of `thread_id` (by its ts) whose turn is not done."""
        async with self._reading() as session:
            row = (
                await session.execute(
                    select(
                        SlackEventRow.event_id,
                        SlackEventRow.team_id,
                        SlackEventRow.event,
                        SlackEventRow.bot_user_id,
                        SlackEventRow.started_at,
                    )
                    .where(SlackEventRow.thread_id == thread_id, SlackEventRow.done_at.is_(None))
                    .order_by(SlackEventRow.message_ts, SlackEventRow.received_at)
                    .limit(1)
                )
            ).first()
        if row is None:
            return None
        return QueuedMessage(
            event_id=row.event_id,
            thread_id=thread_id,
            team_id=row.team_id or "",
            event=row.event or {},
            bot_user_id=row.bot_user_id,
            started_at=row.started_at,
        )

    async def start_turn(self, event_id: str) -> bool:
        """Mark the message's turn started; False if it already was (by a replica that stopped)."""
        async with self._session() as session:
            result = await session.execute(
                update(SlackEventRow)
                .where(SlackEventRow.event_id == event_id, SlackEventRow.started_at.is_(None))
                .values(started_at=utcnow())
            )
        return result.rowcount == 1

    async def finish_turn(self, event_id: str) -> None:
        async with self._session() as session:
            await session.execute(
                update(SlackEventRow).where(SlackEventRow.event_id == event_id).values(done_at=utcnow())
            )

    async def turn_started(self, event_id: str) -> bool:
        """Whether the message's turn has started (or is over)."""
        async with self._reading() as session:
            started = await session.scalar(select(SlackEventRow.started_at).where(SlackEventRow.event_id == event_id))
        return started is not None

    async def waits_behind(self, event_id: str) -> bool:
        """Whether the message's turn has not started and an earlier message of its thread (by ts) is
        not done: it really waits behind another message, not for a free slot of the replica."""
        earlier = aliased(SlackEventRow)
        async with self._reading() as session:
            found = await session.scalar(
                select(earlier.event_id)
                .join(SlackEventRow, SlackEventRow.thread_id == earlier.thread_id)
                .where(
                    SlackEventRow.event_id == event_id,
                    SlackEventRow.started_at.is_(None),
                    earlier.event_id != event_id,
                    earlier.done_at.is_(None),
                    earlier.message_ts < SlackEventRow.message_ts,
                )
                .limit(1)
            )
        return found is not None

    async def threads_left_waiting(self, *, stale_after: float, older_than: float) -> list[str]:
        """Threads with a message queued more than `older_than` seconds ago whose turn nobody alive holds
        (the replica that took it crashed, or the one that received it stopped before starting it)."""
        now = utcnow()
        held = exists().where(
            SlackThreadTurnRow.thread_id == SlackEventRow.thread_id,
            SlackThreadTurnRow.heartbeat_at >= now - timedelta(seconds=stale_after),
        )
        async with self._reading() as session:
            result = await session.scalars(
                select(SlackEventRow.thread_id)
                .where(
                    SlackEventRow.thread_id.is_not(None),
                    SlackEventRow.done_at.is_(None),
                    SlackEventRow.received_at < now - timedelta(seconds=older_than),
                    ~held,
                )
                .distinct()
            )
            return list(result)

    async def start_conversation(self, thread: SlackThread, user: str) -> SlackConversationRow:
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
        async with self._session() as session:
            await session.execute(statement)
            return await session.get(SlackConversationRow, thread.thread_id)

    async def conversation(self, thread: SlackThread) -> SlackConversationRow | None:
        """The conversation held in `thread`, or None if the bot takes no part in it."""
        async with self._reading() as session:
            return await session.get(SlackConversationRow, thread.thread_id)

    async def add_tool_call_message(
        self,
        *,
        kind: str,
        run_id: str,
        tool_call_id: str,
        tool_name: str,
        args: Any,
        thread: SlackThread,
        requester: str,
        request_text: str | None,
        waiting_since: datetime | None = None,
        interrupted: bool = False,
        claim: bool = True,
    ) -> tuple[ToolCallMessageRow, bool]:
        """The row of the message that shows this wait of the call, with a fresh opaque reference,
        recorded before the message is posted (its ts comes later); and whether this caller may post it.

        One wait of a call (`waiting_since`) has one row: when the turn that met the call and the
        recovery both record it, the second gets the first's row. With `claim` the caller takes on
        posting it (True unless someone already has).
        """
        now = utcnow()
        values = dict(
            id=secrets.token_urlsafe(18),
            kind=kind,
            run_id=run_id,
            tool_call_id=tool_call_id,
            tool_name=tool_name,
            args=args,
            thread_id=thread.thread_id,
            team_id=thread.team_id,
            channel=thread.channel,
            thread_ts=thread.thread_ts,
            requester=requester,
            request_text=request_text,
            created_at=now,
            waiting_since=waiting_since,
            interrupted=interrupted,
            post_claimed_at=now if claim else None,
            post_attempts=1 if claim else 0,
            maybe_copies=False,
        )
        statement = self._insert(ToolCallMessageRow).values(**values)
        if waiting_since is not None:
            statement = statement.on_conflict_do_nothing(index_elements=["run_id", "tool_call_id", "waiting_since"])
        async with self._session() as session:
            inserted = (await session.execute(statement)).rowcount == 1
        if inserted:
            return await self.get_message(values["id"]), claim
        existing = await self.message_of_wait(run_id, tool_call_id, waiting_since)
        return existing, claim and await self.claim_post(existing)

    async def message_of_wait(
        self, run_id: str, tool_call_id: str, waiting_since: datetime | None
    ) -> ToolCallMessageRow | None:
        async with self._session() as session:
            return await session.scalar(
                select(ToolCallMessageRow).where(
                    ToolCallMessageRow.run_id == run_id,
                    ToolCallMessageRow.tool_call_id == tool_call_id,
                    ToolCallMessageRow.waiting_since == waiting_since,
                )
            )

    async def claim_post(self, row: ToolCallMessageRow) -> bool:
        """Take on posting `row`'s message: one conditional UPDATE, so of several replicas (or the turn and
        the recovery) exactly one wins; it fails if someone took it on since `row` was read, or it is posted."""
        claimed = (
            ToolCallMessageRow.post_claimed_at.is_(None)
            if row.post_claimed_at is None
            else ToolCallMessageRow.post_claimed_at == row.post_claimed_at
        )
        async with self._session() as session:
            result = await session.execute(
                update(ToolCallMessageRow)
                .where(ToolCallMessageRow.id == row.id, ToolCallMessageRow.ts.is_(None), claimed)
                .values(post_claimed_at=self.storage.clock.now(), post_attempts=ToolCallMessageRow.post_attempts + 1)
            )
        return result.rowcount == 1

    async def unposted_messages(self, limit: int = 100) -> list[ToolCallMessageRow]:
        """Messages recorded but never posted (and not closed), oldest first."""
        async with self._session() as session:
            result = await session.scalars(
                select(ToolCallMessageRow)
                .where(ToolCallMessageRow.ts.is_(None), ToolCallMessageRow.closed_at.is_(None))
                .order_by(ToolCallMessageRow.created_at)
                .limit(limit)
            )
            return list(result)

    async def open_messages(self, limit: int = 500) -> list[ToolCallMessageRow]:
        """Messages not yet closed (their buttons may still show), oldest first."""
        async with self._session() as session:
            result = await session.scalars(
                select(ToolCallMessageRow)
                .where(ToolCallMessageRow.closed_at.is_(None))
                .order_by(ToolCallMessageRow.created_at)
                .limit(limit)
            )
            return list(result)

    async def calls_with_open_messages(self, calls: list[tuple[str, str]]) -> set[tuple[str, str]]:
        """Which of the (run_id, tool_call_id) pairs have a message that is not closed."""
        found: set[tuple[str, str]] = set()
        for start in range(0, len(calls), 200):
            batch = calls[start : start + 200]
            async with self._session() as session:
                result = await session.execute(
                    select(ToolCallMessageRow.run_id, ToolCallMessageRow.tool_call_id).where(
                        tuple_(ToolCallMessageRow.run_id, ToolCallMessageRow.tool_call_id).in_(batch),
                        ToolCallMessageRow.closed_at.is_(None),
                    )
                )
                found.update((run_id, call_id) for run_id, call_id in result)
        return found

    async def set_message_ts(self, ref: str, ts: str) -> None:
        """Record a posted message of `ref`: the first becomes its ts, any other a copy."""
        async with self._session() as session:
            result = await session.execute(
                update(ToolCallMessageRow)
                .where(ToolCallMessageRow.id == ref, or_(ToolCallMessageRow.ts.is_(None), ToolCallMessageRow.ts == ts))
                .values(ts=ts)
            )
        if result.rowcount == 0:
            await self.add_copy(ref, ts)

    async def add_copy(self, ref: str, ts: str) -> bool:
        """Remember another message showing `ref`'s call; False if it was known."""
        row = await self.get_message(ref)
        if row is None or row.ts == ts:
            return False
        statement = (
            self._insert(ToolCallMessageCopyRow)
            .values(message_id=ref, ts=ts, created_at=utcnow())
            .on_conflict_do_nothing(index_elements=["message_id", "ts"])
        )
        async with self._session() as session:
            return (await session.execute(statement)).rowcount == 1

    async def message_ts_all(self, row: ToolCallMessageRow) -> list[str]:
        """The ts of every known message that shows `row`'s call: its own first, then the copies."""
        async with self._session() as session:
            copies = await session.scalars(
                select(ToolCallMessageCopyRow.ts)
                .where(ToolCallMessageCopyRow.message_id == row.id)
                .order_by(ToolCallMessageCopyRow.created_at)
            )
            found = [row.ts] if row.ts else []
            return found + [ts for ts in copies if ts not in found]

    async def mark_maybe_copies(self, ref: str) -> None:
        async with self._session() as session:
            await session.execute(
                update(ToolCallMessageRow).where(ToolCallMessageRow.id == ref).values(maybe_copies=True)
            )

    async def get_message(self, ref: str) -> ToolCallMessageRow | None:
        if not ref or len(ref) > 64:
            return None
        async with self._session() as session:
            return await session.get(ToolCallMessageRow, ref)

    async def messages_of_call(self, run_id: str, tool_call_id: str) -> list[ToolCallMessageRow]:
        async with self._session() as session:
            result = await session.scalars(
                select(ToolCallMessageRow).where(
                    ToolCallMessageRow.run_id == run_id, ToolCallMessageRow.tool_call_id == tool_call_id
                )
            )
            return list(result)

    async def open_messages_in_thread(self, thread_id: str) -> list[ToolCallMessageRow]:
        async with self._reading() as session:
            result = await session.scalars(
                select(ToolCallMessageRow).where(
                    ToolCallMessageRow.thread_id == thread_id, ToolCallMessageRow.closed_at.is_(None)
                )
            )
            return list(result)

    async def open_approvals(self) -> list[ToolCallMessageRow]:
        """Every approval message not yet closed, oldest first, one per call (for the App Home)."""
        async with self._session() as session:
            result = await session.scalars(
                select(ToolCallMessageRow)
                .where(ToolCallMessageRow.kind == "approval", ToolCallMessageRow.closed_at.is_(None))
                .order_by(ToolCallMessageRow.created_at)
            )
            rows = {(row.run_id, row.tool_call_id): row for row in reversed(list(result))}
            return sorted(rows.values(), key=lambda row: row.created_at)

    async def home_opened(self, user_id: str) -> None:
        """Remember that `user_id` opened the App Home (their Home is refreshed from now on)."""
        statement = (
            self._insert(HomeViewRow)
            .values(user_id=user_id, digest=None, opened_at=utcnow())
            .on_conflict_do_nothing(index_elements=["user_id"])
        )
        async with self._session() as session:
            await session.execute(statement)

    async def home_digests(self) -> dict[str, str | None]:
        """Every user who opened the App Home, with the digest of the view last published for them."""
        async with self._session() as session:
            return {row.user_id: row.digest for row in await session.scalars(select(HomeViewRow))}

    async def home_digest(self, user_id: str) -> str | None:
        async with self._session() as session:
            row = await session.get(HomeViewRow, user_id)
            return row.digest if row is not None else None

    async def home_published(self, user_id: str, digest: str) -> None:
        async with self._session() as session:
            await session.execute(
                update(HomeViewRow).where(HomeViewRow.user_id == user_id).values(digest=digest, published_at=utcnow())
            )

    async def close_message(self, ref: str, at: datetime | None = None) -> bool:
        """Mark the message closed; True only for the one caller that closed it (replicas, copies)."""
        async with self._session() as session:
            result = await session.execute(
                update(ToolCallMessageRow)
                .where(ToolCallMessageRow.id == ref, ToolCallMessageRow.closed_at.is_(None))
                .values(closed_at=at or utcnow())
            )
        return bool(result.rowcount)
