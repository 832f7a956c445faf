"""Handled Slack events (`slack_events`): the dedup of deliveries, and the messages queued for their turn.

Claiming an event is an INSERT that leaves an existing row alone, so two replicas (or a retry) racing for the
same event get one winner from the database. Claims that arrive together are written together, in one
statement that commits by itself (a burst of mentions costs a few commits, not one each; one round trip on
PostgreSQL), because the ack waits for them (`ClaimWriter`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Insert, Select, Update, and_, bindparam, delete, exists, func, literal, select, true, update
from sqlalchemy.orm import aliased

from memory import Storage, retried_while_away
from memory.tables import utcnow

from ..tables import SlackConversationRow, SlackEventRow, SlackThreadTurnRow
from ..threads import thread_of_message
from ._table_store import TableStore

_logger = logging.getLogger("bot.slack")


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
    conversation: SlackConversationRow | None = None
    """The conversation held in the message's thread, read when its turn was started (None: the bot takes no
    part in the thread); for a message that starts (or continues) one by itself (`starts_conversation`),
    recorded then (`SlackStores`)."""
    new_conversation: bool = False
    """Whether that record was written for this message (the thread held no conversation before)."""

    @property
    def started(self) -> bool:
        return self.started_at is not None

    @property
    def starts_conversation(self) -> bool:
        """A mention, or a message in a DM: the bot takes part in its thread from then on."""
        return self.event.get("type") == "app_mention" or self.event.get("channel_type") == "im"


class ClaimWriter:
    """Writes the claims that wait at one moment in one statement; claims that come meanwhile go in the next.

    `write(batch)` inserts a batch (first claim of each event id) and returns the event ids it inserted. It
    runs on `loop`, where its storage's connections live, whichever loop claims: given the loop of a thread of
    its own (the intake's, `intake_thread.py`), a batch's answer is read as soon as it comes and the next batch
    starts at once, where on the claimants' loop both wait until that loop has handled the requests that came
    meanwhile. None: on the claimant's loop.

    A claimant that stops waiting (its ack gave up) cancels its future; `late`, given with the claim, then
    hears whether it won when its batch is written.

    `prune()`, the store's forgetting of its old rows, runs there every `prune_every` claims, after a batch is
    answered and before the next is written (a claim never waits for it); its failure is only logged.
    """

    def __init__(
        self,
        write: Callable[[list[dict[str, Any]]], Awaitable[set[str]]],
        *,
        loop: asyncio.AbstractEventLoop | None = None,
        prune: Callable[[], Awaitable[Any]] | None = None,
        prune_every: int = 500,
    ):
        self._write = write
        self._loop = loop
        self._prune, self._prune_every = prune, prune_every
        self._unpruned = 0
        """Claims written since the last prune."""
        self._waiting: list[_Claim] = []
        self._guard = threading.Lock()
        """Guards `_waiting` and `_writing`: claimants and the writer may be on different threads."""
        self._writing = False
        """Whether a writer task takes the waiting claims (it stops once none waits)."""
        self._writer: asyncio.Task[None] | None = None

    def claim(self, values: dict[str, Any], *, late: Callable[[bool], None] | None = None) -> asyncio.Future[bool]:
        """Queue a claim of `values["event_id"]` now; its future says whether it won (the first of its batch,
        and new to the table). A plain function, not a coroutine: the ack path starts no task per claim, and
        awaits the future itself (no `asyncio.shield`, whose callback would cost the answer one more turn of
        a busy loop): cancelling it, the claimant hears through `late`."""
        here = asyncio.get_running_loop()
        claimed = here.create_future()
        with self._guard:
            self._waiting.append(_Claim(values, claimed, late))
            start, self._writing = not self._writing, True
        if start:
            if self._loop is None or self._loop is here:
                self._start_writing()
            else:
                self._loop.call_soon_threadsafe(self._start_writing)
        return claimed

    def _start_writing(self) -> None:
        self._writer = asyncio.get_running_loop().create_task(self._write_waiting())

    async def _write_waiting(self) -> None:
        batch: list[_Claim] = []
        try:
            while True:
                with self._guard:
                    batch, self._waiting = self._waiting, []
                    if not batch:
                        self._writing = False
                        return
                first: dict[str, dict[str, Any]] = {}
                for claim in batch:
                    first.setdefault(claim.values["event_id"], claim.values)
                try:
                    inserted = await self._write(list(first.values()))
                except Exception as exc:
                    _answer_claimants([(claim, exc) for claim in batch])
                    continue
                _answer_claimants([(claim, claim.won(inserted, first)) for claim in batch])
                self._unpruned, batch = self._unpruned + len(batch), []
                if self._prune is not None and self._unpruned >= self._prune_every:
                    self._unpruned = 0
                    try:
                        await self._prune()
                    except Exception:  # noqa: BLE001 - tried again after the next `prune_every` claims
                        _logger.warning("forgetting old rows failed", exc_info=True)
        except BaseException:  # cancelled (its loop stops): no claim is left waiting for ever
            with self._guard:
                batch, self._waiting, self._writing = batch + self._waiting, [], False
            _answer_claimants([(claim, RuntimeError("the claims' writer stopped")) for claim in batch])
            raise


@dataclass(frozen=True, slots=True)
class _Claim:
    values: dict[str, Any]
    claimed: asyncio.Future[bool]
    late: Callable[[bool], None] | None

    def won(self, inserted: set[str], first: dict[str, dict[str, Any]]) -> bool:
        """Whether this claim won: inserted, and the first of its event id in the batch."""
        event_id = self.values["event_id"]
        return event_id in inserted and first[event_id] is self.values


def _answer_claimants(answers: list[tuple[_Claim, bool | Exception]]) -> None:
    """Answer each claim (whether it won, or the write's error) on its claimant's loop."""
    by_loop: dict[asyncio.AbstractEventLoop, list[tuple[_Claim, bool | Exception]]] = {}
    for claim, answer in answers:
        by_loop.setdefault(claim.claimed.get_loop(), []).append((claim, answer))
    here = asyncio.get_running_loop()
    for loop, theirs in by_loop.items():
        if loop is here:
            _answer(theirs)
        else:
            with contextlib.suppress(RuntimeError):  # that loop closed: nobody waits any more
                loop.call_soon_threadsafe(_answer, theirs)


def _answer(answers: list[tuple[_Claim, bool | Exception]]) -> None:
    for claim, answer in answers:
        if not claim.claimed.done():
            if isinstance(answer, Exception):
                claim.claimed.set_exception(answer)
            else:
                claim.claimed.set_result(answer)
        elif claim.claimed.cancelled() and claim.late is not None and not isinstance(answer, Exception):
            claim.late(answer)


@retried_while_away
class EventLog(TableStore):
    """The events the bot handled, and the messages among them that wait for (or take) their turn."""

    def __init__(
        self,
        storage: Storage,
        *,
        keep_events: timedelta = timedelta(days=1),
        prune_every: int = 500,
        write_loop: asyncio.AbstractEventLoop | None = None,
    ):
        """`write_loop`: the loop (of a thread of its own) where the claims are written, and where `storage`'s
        connections live (`ClaimWriter`); None: the claimant's."""
        super().__init__(storage)
        self.keep_events = keep_events
        """How long a handled event id is kept: Slack retries within minutes, so a day is plenty."""
        self._writer = ClaimWriter(self._insert_claims, loop=write_loop, prune=self.prune, prune_every=prune_every)
        self._taking_and_starting: Select[Any] | None = None
        insert = self._insert(SlackEventRow)
        # a second try of a claim whose first landed (its answer lost with the connection) meets its own row,
        # the one with its `received_at`: it still wins, where another claim's row leaves it out
        self._claim = insert.on_conflict_do_update(
            index_elements=["event_id"],
            set_={"received_at": insert.excluded.received_at},
            where=SlackEventRow.received_at == insert.excluded.received_at,
        ).returning(SlackEventRow.event_id)

    async def claim(
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
        return await self.claim_soon(event_id, team_id, thread_id=thread_id, event=event, bot_user_id=bot_user_id)

    def claim_soon(
        self,
        event_id: str,
        team_id: str | None,
        *,
        thread_id: str | None = None,
        event: dict[str, Any] | None = None,
        bot_user_id: str | None = None,
        late: Callable[[bool], None] | None = None,
    ) -> asyncio.Future[bool]:
        """`claim`, queued now: its future (for the ack path, which waits for it a bounded time and starts
        no task per delivery; cancelling it, it hears through `late`, see `ClaimWriter.claim`). The write is
        tried again while the database is away (`_insert_claims`)."""
        return self._writer.claim(
            {
                "event_id": event_id,
                "team_id": team_id,
                "received_at": utcnow(),
                "thread_id": thread_id,
                "message_ts": (event or {}).get("ts") if thread_id else None,
                "event": event if thread_id else None,
                "bot_user_id": bot_user_id if thread_id else None,
            },
            late=late,
        )

    async def _insert_claims(self, rows: list[dict[str, Any]]) -> set[str]:
        # one statement, committed by itself (one round trip on PostgreSQL), and tried again as it was
        async with self._one_statement(idempotent=True) as connection:
            return set((await connection.execute(self._claim, rows)).scalars())

    async def prune(self) -> int:
        """Forget handled events older than `keep_events`; returns how many were forgotten."""
        async with self._writing() as connection:
            result = await connection.execute(
                delete(SlackEventRow).where(SlackEventRow.received_at < utcnow() - self.keep_events)
            )
        return result.rowcount

    # --- messages queued for their turn, one turn at a time per thread --------------------------
    async def start_next(self, thread_id: str, holder: str) -> QueuedMessage | None:
        """The oldest message of `thread_id` (by its ts) whose turn is not done, its turn marked started;
        its `started_at` says whether a replica had started it before (and stopped). None if none waits, or
        if the thread's turn is not `holder`'s (`ThreadTurns`): only the lease's holder starts a message.

        One statement: an UPDATE of that message that keeps a start already marked, and returns the message,
        its start (new when it is the time this call wrote) and the thread's conversation (its one read of
        another table, by its key). Tried again after a lost connection, a try that had landed makes the
        message look started before, which the turn checks (`TurnQueue`)."""
        now = utcnow()
        async with self._one_statement(idempotent=True) as connection:
            row = (
                await connection.execute(_START_NEXT, {"b_thread": thread_id, "b_holder": holder, "b_now": now})
            ).first()
        return None if row is None else _queued(row, thread_id, now)

    async def take_and_start(
        self, taking: Insert, thread_id: str, holder: str, *, stale_after: float
    ) -> tuple[bool, QueuedMessage | None]:
        """`ThreadTurns.take` (whose INSERT is `taking`) and, if it took the lease, `start_next`, in one
        statement (PostgreSQL: SQLite has no INSERT or UPDATE inside a WITH): whether the lease was taken,
        and the message started (None: none waited). Tried again after a lost connection as
        `ThreadTurns.take` is."""
        now = utcnow()
        if self._taking_and_starting is None:
            self._taking_and_starting = _taking_and_starting(taking)
        values = {"b_thread": thread_id, "b_holder": holder, "b_now": now}
        async with self._one_statement(idempotent=True) as connection:
            row = (
                await connection.execute(
                    self._taking_and_starting, {**values, "b_stale": now - timedelta(seconds=stale_after)}
                )
            ).one()
        return bool(row.took), None if row.event_id is None else _queued(row, thread_id, now)

    async def any_queued(self, thread_id: str) -> bool:
        """Whether a message of `thread_id` waits for its turn (or takes it)."""
        async with self._reading() as reading:
            return await reading.scalar(_ANY_UNDONE, {"b_thread": thread_id}) is not None

    def finishing(self, event_id: str) -> Update:
        """The statement that marks `event_id`'s turn done (`SlackStores.finish_turn` runs it with others)."""
        return update(SlackEventRow).where(SlackEventRow.event_id == event_id).values(done_at=utcnow())

    async def waits_behind(self, event_id: str) -> bool:
        """Whether the message's turn has not started and an earlier message of its thread (by ts) is
        not done: it really waits behind another message, not for a free slot of the replica."""
        earlier = aliased(SlackEventRow)
        async with self._reading() as connection:
            found = await connection.scalar(
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

    async def threads_left_waiting(self, *, stale_after: float, older_than: float) -> LeftWaiting:
        """Threads with a message queued more than `older_than` seconds ago whose turn nobody alive holds
        (the replica that took it crashed, or the one that received it stopped before starting it), and
        whether any message is still queued or at work (the sweep then looks again soon). One read; the
        one read of another table in it: whether a live lease (`ThreadTurns`) holds the thread."""
        now = utcnow()
        held = exists().where(
            SlackThreadTurnRow.thread_id == SlackEventRow.thread_id,
            SlackThreadTurnRow.heartbeat_at >= now - timedelta(seconds=stale_after),
        )
        left = and_(SlackEventRow.received_at < now - timedelta(seconds=older_than), ~held)
        async with self._reading() as connection:
            result = await connection.execute(
                select(SlackEventRow.thread_id, left.label("left"))
                .where(SlackEventRow.thread_id.is_not(None), SlackEventRow.done_at.is_(None))
                .distinct()
            )
            rows = list(result)
        threads = sorted({row.thread_id for row in rows if row.left and row.thread_id is not None})
        return LeftWaiting(threads=threads, open=bool(rows))


@dataclass(frozen=True, kw_only=True)
class LeftWaiting:
    """What the queue's sweep found (`SlackEvents.threads_left_waiting`)."""

    threads: list[str]
    """Threads whose queued messages nobody alive is answering."""
    open: bool
    """Whether any message of a thread is still queued or at work."""


def _queued(row: Any, thread_id: str, now: datetime) -> QueuedMessage:
    """The message a start returned (`_starting`), with the thread's conversation; started before unless its
    start is `now`, the one this start wrote."""
    event = row.event or {}
    conversation = None
    if row.started_by is not None:
        thread = thread_of_message(event, row.team_id or "")
        conversation = SlackConversationRow(
            thread_id=thread_id,
            team_id=thread.team_id,
            channel=thread.channel,
            thread_ts=thread.thread_ts,
            started_by=row.started_by,
            created_at=row.created_at,
            language=row.language,
        )
    return QueuedMessage(
        event_id=row.event_id,
        thread_id=thread_id,
        team_id=row.team_id or "",
        event=event,
        bot_user_id=row.bot_user_id,
        started_at=None if row.started_at == now else row.started_at,
        conversation=conversation,
    )


# The statements of every turn, built once: building one costs more CPU than running it. `bindparam`
# names the values each call passes (`b_`: SQLAlchemy keeps column names for the VALUES and SET clauses).
_QUEUED = aliased(SlackEventRow)


def _starting(fence: Any) -> Update:
    """The UPDATE that starts the oldest waiting message of the thread `b_thread` if `fence` holds (keeping a
    start already marked, else `b_now`), and returns it with the thread's conversation."""
    return (
        update(SlackEventRow)
        .where(
            SlackEventRow.event_id
            == select(_QUEUED.event_id)
            .where(_QUEUED.thread_id == bindparam("b_thread"), _QUEUED.done_at.is_(None))
            .order_by(_QUEUED.message_ts, _QUEUED.received_at)
            .limit(1)
            .scalar_subquery(),
            fence,
        )
        .values(
            started_at=func.coalesce(SlackEventRow.started_at, bindparam("b_now", type_=SlackEventRow.started_at.type))
        )
        .returning(
            SlackEventRow.event_id,
            SlackEventRow.team_id,
            SlackEventRow.event,
            SlackEventRow.bot_user_id,
            SlackEventRow.started_at,
            *(
                select(column)
                .where(SlackConversationRow.thread_id == bindparam("b_thread"))
                .scalar_subquery()
                .label(name)
                for name, column in (
                    ("started_by", SlackConversationRow.started_by),
                    ("created_at", SlackConversationRow.created_at),
                    ("language", SlackConversationRow.language),
                )
            ),
        )
    )


_START_NEXT = _starting(
    exists().where(
        SlackThreadTurnRow.thread_id == bindparam("b_thread"), SlackThreadTurnRow.holder == bindparam("b_holder")
    )
)


def _taking_and_starting(taking: Insert) -> Select[Any]:
    """One statement of two data-modifying parts (PostgreSQL): `taking`, the lease's INSERT (`ThreadTurns`),
    and the start of the thread's oldest waiting message if it took the lease; one row, whether it took
    the lease (`took`) and the message started (its columns NULL when none waits)."""
    took = taking.returning(SlackThreadTurnRow.thread_id).cte("took")
    started = _starting(exists(select(took.c.thread_id))).cte("started")
    anchor = select(literal(1).label("one")).subquery("anchor")
    return select(select(func.count()).select_from(took).scalar_subquery().label("took"), *started.c).select_from(
        anchor.outerjoin(started, true())
    )


_ANY_UNDONE = (
    select(SlackEventRow.event_id)
    .where(SlackEventRow.thread_id == bindparam("b_thread"), SlackEventRow.done_at.is_(None))
    .limit(1)
)
