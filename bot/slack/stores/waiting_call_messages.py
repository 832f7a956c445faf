"""The messages that show waiting tool calls (`slack_tool_call_messages`) and their copies
(`slack_tool_call_message_copies`: the same call shown again, after a post whose answer was lost).

A message is recorded before it is posted (its ts comes later), with a fresh opaque reference that its
buttons carry; posting it is claimed with a conditional UPDATE, so of several replicas (or the turn and
the recovery) exactly one posts it.
"""

from __future__ import annotations

import secrets
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import and_, bindparam, or_, select, tuple_, update
from sqlalchemy.sql.dml import UpdateBase

from memory import retried_while_away
from memory.tables import utcnow

from ..tables import EscalationPostRow, ToolCallMessageCopyRow, ToolCallMessageRow
from ..threads import SlackThread
from ._table_store import TableStore, rows_changed


class Recorded(NamedTuple):
    """A waiting call's message as `WaitingCallMessages.record` left it."""

    row: ToolCallMessageRow
    mine: bool
    """Whether the caller holds the claim on posting it (it asked to, and nobody else had)."""
    inserted: bool
    """Whether the caller's own INSERT wrote the row, with its claim when `mine` (not another's row, met)."""


class ShownMessage(NamedTuple):
    """A Slack message that shows a waiting call: the thread's own, or a copy."""

    channel: str
    ts: str
    escalated_to: str | None = None
    """Whom an escalation posted this copy to (a person's user ID for a DM copy; a channel's ID)."""


@retried_while_away
class WaitingCallMessages(TableStore):
    """The approval and question messages of waiting calls, and the copies of each."""

    async def record(
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
    ) -> Recorded:
        """The row of the message that shows this wait of the call, with a fresh opaque reference,
        recorded before the message is posted (its ts comes later); whether this caller may post it, and
        whether this call inserted it.

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
        # one wait's row is inserted once (a second try meets the first's), so a lost connection is tried again
        async with self._one_statement(idempotent=waiting_since is not None) as connection:
            inserted = rows_changed(await connection.execute(statement)) == 1
        if inserted:  # the row is what was written: not read back
            return Recorded(ToolCallMessageRow(**values, ts=None, closed_at=None), claim, inserted=True)
        found = await self.of_wait(run_id, tool_call_id, waiting_since)
        assert found is not None, "another insert of the same wait won"
        return Recorded(found, claim and await self.claim_post(found), inserted=False)

    async def of_wait(
        self, run_id: str, tool_call_id: str, waiting_since: datetime | None
    ) -> ToolCallMessageRow | None:
        """The message of this one wait of the call."""
        async with self._reading_rows() as session:
            return await session.scalar(
                select(ToolCallMessageRow).where(
                    ToolCallMessageRow.run_id == run_id,
                    ToolCallMessageRow.tool_call_id == tool_call_id,
                    ToolCallMessageRow.waiting_since == waiting_since,
                )
            )

    async def claim_post(self, row: ToolCallMessageRow) -> bool:
        """Take on posting `row`'s message: one conditional UPDATE, so of several replicas (or the turn and
        the recovery) exactly one wins; it fails if someone took it on since `row` was read, or it is posted.
        The winner's `row` keeps the claim's time: `holds_post` checks it is still the claim in force."""
        claimed = (
            ToolCallMessageRow.post_claimed_at.is_(None)
            if row.post_claimed_at is None
            else ToolCallMessageRow.post_claimed_at == row.post_claimed_at
        )
        now = self.storage.clock.now()
        # tried again after a lost connection, a claim that landed fails: the recovery pass posts it later
        async with self._one_statement(idempotent=True) as connection:
            result = await connection.execute(
                update(ToolCallMessageRow)
                .where(ToolCallMessageRow.id == row.id, ToolCallMessageRow.ts.is_(None), claimed)
                .values(post_claimed_at=now, post_attempts=ToolCallMessageRow.post_attempts + 1)
            )
        if rows_changed(result) == 1:
            row.post_claimed_at = now
            return True
        return False

    async def holds_post(self, row: ToolCallMessageRow) -> bool:
        """Whether the claim on posting `row`'s message that this caller holds (`row.post_claimed_at`) is still
        in force: nobody took the post over since (a replica that stalled past `repost_after`), and the message
        is neither posted nor closed. Asked right before each post, so that a stalled replica posts nothing
        after the fact."""
        async with self._reading() as connection:
            found = await connection.scalar(
                select(ToolCallMessageRow.id).where(
                    ToolCallMessageRow.id == row.id,
                    ToolCallMessageRow.ts.is_(None),
                    ToolCallMessageRow.closed_at.is_(None),
                    ToolCallMessageRow.post_claimed_at == row.post_claimed_at,
                )
            )
        return found is not None

    async def unposted(self, limit: int = 100) -> list[ToolCallMessageRow]:
        """Messages recorded but never posted (and not closed), oldest first."""
        async with self._reading_rows() as session:
            result = await session.scalars(
                select(ToolCallMessageRow)
                .where(ToolCallMessageRow.ts.is_(None), ToolCallMessageRow.closed_at.is_(None))
                .order_by(ToolCallMessageRow.created_at)
                .limit(limit)
            )
            return list(result)

    async def open(self, limit: int = 500) -> list[ToolCallMessageRow]:
        """Messages not yet closed (their buttons may still show), oldest first."""
        async with self._reading_rows() as session:
            result = await session.scalars(
                select(ToolCallMessageRow)
                .where(ToolCallMessageRow.closed_at.is_(None))
                .order_by(ToolCallMessageRow.created_at)
                .limit(limit)
            )
            return list(result)

    async def calls_shown(self, calls: list[tuple[str, str]]) -> set[tuple[str, str]]:
        """Which of the (run_id, tool_call_id) pairs have a message that is not closed."""
        found: set[tuple[str, str]] = set()
        for start in range(0, len(calls), 200):
            batch = calls[start : start + 200]
            async with self._reading_rows() as session:
                result = await session.execute(
                    select(ToolCallMessageRow.run_id, ToolCallMessageRow.tool_call_id).where(
                        tuple_(ToolCallMessageRow.run_id, ToolCallMessageRow.tool_call_id).in_(batch),
                        ToolCallMessageRow.closed_at.is_(None),
                    )
                )
                found.update((run_id, call_id) for run_id, call_id in result)
        return found

    async def set_ts(self, ref: str, ts: str) -> None:
        """Record a posted message of `ref`: the first becomes its ts, any other a copy."""
        async with self._one_statement(idempotent=True) as connection:
            result = await connection.execute(
                update(ToolCallMessageRow)
                .where(ToolCallMessageRow.id == ref, or_(ToolCallMessageRow.ts.is_(None), ToolCallMessageRow.ts == ts))
                .values(ts=ts)
            )
        if rows_changed(result) == 0:
            await self.add_copy(ref, ts)

    async def add_copy(
        self,
        ref: str,
        ts: str,
        *,
        channel: str | None = None,
        escalated_to: str | None = None,
        row: ToolCallMessageRow | None = None,
    ) -> bool:
        """Remember another message showing `ref`'s call (in `channel` when not the first message's: an
        escalation's copy, posted to `escalated_to`); False if it was known. `row`: `ref`'s, as the caller read
        it since it was posted (read here when not given)."""
        row = row if row is not None and row.ts is not None else await self.get(ref)
        if row is None or (row.ts == ts and channel in (None, row.channel)):
            return False
        statement = (
            self._insert(ToolCallMessageCopyRow)
            .values(
                message_id=ref,
                ts=ts,
                created_at=utcnow(),
                channel=None if channel == row.channel else channel,
                escalated_to=escalated_to,
            )
            .on_conflict_do_nothing(index_elements=["message_id", "ts"])
        )
        async with self._one_statement(idempotent=True) as connection:
            return rows_changed(await connection.execute(statement)) == 1

    async def escalated_to(self, ref: str) -> set[str]:
        """Whom the escalation already posted a copy of `ref`'s message to (user IDs, channel IDs)."""
        async with self._reading_rows() as session:
            result = await session.scalars(
                select(ToolCallMessageCopyRow.escalated_to).where(
                    ToolCallMessageCopyRow.message_id == ref, ToolCallMessageCopyRow.escalated_to.is_not(None)
                )
            )
            return {person for person in result if person is not None}

    async def note_escalation_post(self, ref: str, escalated_to: str) -> bool:
        """Record, before posting it, an escalation's post of `ref`'s message to `escalated_to` (a person or a
        channel), and mark the message as maybe having copies nobody recorded (its answer may be lost); False
        if a post to them was tried before (a copy of it may be in Slack: look before posting again)."""
        dialect = self.storage.dialect
        noted = (
            self._insert(EscalationPostRow)
            .values(dialect.row(EscalationPostRow.__table__, {"message_id": ref, "escalated_to": escalated_to,
                                                               "tried_at": utcnow()}))
            .on_conflict_do_nothing(index_elements=["message_id", "escalated_to"])
        )  # fmt: skip
        marked = update(ToolCallMessageRow).where(ToolCallMessageRow.id == ref).values(maybe_copies=True)
        # tried again after a lost connection, a post that was noted is "tried before": looked for first
        async with self._one_statement(idempotent=True) as connection:
            first, _ = await dialect.together(connection, noted, marked)
        return first == 1

    async def unconfirmed_escalation_posts(self, ref: str) -> list[str]:
        """Whom an escalation's post of `ref`'s message was tried to without a copy being recorded (its answer was
        lost, or its process died): a copy may be in their DM or channel all the same."""
        confirmed = select(ToolCallMessageCopyRow.ts).where(
            ToolCallMessageCopyRow.message_id == ref,
            ToolCallMessageCopyRow.escalated_to == EscalationPostRow.escalated_to,
        )
        async with self._reading() as connection:
            result = await connection.scalars(
                select(EscalationPostRow.escalated_to).where(EscalationPostRow.message_id == ref, ~confirmed.exists())
            )
            return list(result)

    async def is_copy_elsewhere(self, ref: str, channel: str, ts: str) -> bool:
        """Whether the message `ts` in `channel` is a recorded copy of `ref`'s in another channel (escalated)."""
        async with self._reading_rows() as session:
            found = await session.scalar(
                select(ToolCallMessageCopyRow.ts).where(
                    ToolCallMessageCopyRow.message_id == ref,
                    ToolCallMessageCopyRow.channel == channel,
                    ToolCallMessageCopyRow.ts == ts,
                )
            )
            return found is not None

    async def every_message(self, row: ToolCallMessageRow) -> list[ShownMessage]:
        """Every known message that shows `row`'s call: its own first (its ts as stored now, which `row` is
        brought up to), then the copies (an escalation's in their own channels, with whom the escalation posted
        each to). One read of the row and its copies together."""
        async with self._reading() as connection:
            result = (await connection.execute(_EVERY_MESSAGE, {"b_ref": row.id})).all()
        if result:
            row.ts = result[0].own_ts
        return _shown(row, [(channel, ts, escalated_to) for _, channel, ts, escalated_to in result])

    async def shown_of_call(
        self, run_id: str, tool_call_id: str
    ) -> list[tuple[ToolCallMessageRow, list[ShownMessage]]]:
        """Every message of the call over all its waits, oldest first, each with every known message that shows
        it (`every_message`); one read of the rows and their copies together."""
        async with self._reading() as connection:
            result = await connection.execute(_SHOWN_OF_CALL, {"b_run": run_id, "b_call": tool_call_id})
            return _rows_with_copies(result)

    async def mark_maybe_copies(self, ref: str) -> None:
        """A post of `ref` may have gone out without its answer (a copy may show in Slack)."""
        async with self._one_statement(idempotent=True) as connection:
            await connection.execute(
                update(ToolCallMessageRow).where(ToolCallMessageRow.id == ref).values(maybe_copies=True)
            )

    async def get(self, ref: str) -> ToolCallMessageRow | None:
        """The message of the reference `ref` (a button's value: anything, so it is checked)."""
        if not ref or len(ref) > 64:
            return None
        async with self._reading_rows() as session:
            return await session.get(ToolCallMessageRow, ref)

    async def of_call(self, run_id: str, tool_call_id: str) -> list[ToolCallMessageRow]:
        """Every message of the call, over all its waits."""
        async with self._reading_rows() as session:
            result = await session.scalars(
                select(ToolCallMessageRow).where(
                    ToolCallMessageRow.run_id == run_id, ToolCallMessageRow.tool_call_id == tool_call_id
                )
            )
            return list(result)

    async def open_in_thread(
        self, thread_id: str, *, with_call: tuple[str, str] | None = None
    ) -> list[tuple[ToolCallMessageRow, list[ShownMessage]]]:
        """The thread's messages not yet closed, as detached rows, each with every known message that shows
        it (`every_message`), in one read. Read after most turns, and mostly none: a plain connection, with
        rows built only for what it finds. `with_call` (run id, tool call id): that call's messages too,
        closed or not (`shown_of_call`), in the same read."""
        async with self._reading() as connection:
            if with_call is None:
                result = await connection.execute(_OPEN_IN_THREAD, {"b_thread": thread_id})
            else:
                run_id, tool_call_id = with_call
                parameters = {"b_thread": thread_id, "b_run": run_id, "b_call": tool_call_id}
                result = await connection.execute(_OPEN_IN_THREAD_WITH_CALL, parameters)
            return _rows_with_copies(result)

    async def open_approvals(self) -> list[ToolCallMessageRow]:
        """Every approval message not yet closed, oldest first, one per call (for the App Home)."""
        async with self._reading_rows() as session:
            result = await session.scalars(
                select(ToolCallMessageRow)
                .where(ToolCallMessageRow.kind == "approval", ToolCallMessageRow.closed_at.is_(None))
                .order_by(ToolCallMessageRow.created_at)
            )
            return one_per_call(list(result))

    async def close(self, ref: str, at: datetime | None = None, *, with_: UpdateBase | None = None) -> bool:
        """Mark the message closed; True only for the one caller that closed it (replicas, copies). `with_`:
        another write that commits with it, in the same statement (`Dialect.together`: a click marked done)."""
        statement = (
            update(ToolCallMessageRow)
            .where(ToolCallMessageRow.id == ref, ToolCallMessageRow.closed_at.is_(None))
            .values(closed_at=at or utcnow())
        )
        async with self._one_statement(idempotent=True) as connection:
            if with_ is None:
                return bool(rows_changed(await connection.execute(statement)))
            closed, _ = await self.storage.dialect.together(connection, statement, with_)
        return bool(closed)


def one_per_call(rows: list[ToolCallMessageRow]) -> list[ToolCallMessageRow]:
    """`rows` (oldest first) with one message per call, the oldest, oldest first."""
    by_call = {(row.run_id, row.tool_call_id): row for row in reversed(rows)}
    return sorted(by_call.values(), key=lambda row: row.created_at)


def _shown(row: ToolCallMessageRow, copies: list[tuple[str | None, str | None, str | None]]) -> list[ShownMessage]:
    """The messages that show `row`'s call: its own (once posted), then its copies (channel, ts, escalated_to;
    a None ts is none: an outer join's row without copies), each once."""
    found = [ShownMessage(row.channel, row.ts)] if row.ts else []
    for channel, ts, escalated_to in copies:
        if ts is not None and (channel or row.channel, ts) not in [(m.channel, m.ts) for m in found]:
            found.append(ShownMessage(channel or row.channel, ts, escalated_to))
    return found


def _rows_with_copies(result: Any) -> list[tuple[ToolCallMessageRow, list[ShownMessage]]]:
    """The rows of a read of `_WITH_COPIES` (a row per copy, or one without), each once, with what shows it."""
    rows: dict[str, tuple[ToolCallMessageRow, list[tuple[str | None, str | None, str | None]]]] = {}
    for found in result:
        values = found._mapping
        if values["id"] not in rows:
            rows[values["id"]] = (ToolCallMessageRow(**{c.key: values[c.key] for c in _MESSAGES.c}), [])
        rows[values["id"]][1].append((values["copy_channel"], values["copy_ts"], values["copy_escalated_to"]))
    return [(row, _shown(row, copies)) for row, copies in rows.values()]


_MESSAGES = ToolCallMessageRow.__table__
_COPIES = ToolCallMessageCopyRow.__table__
_WITH_COPIES = (
    select(
        _MESSAGES,
        _COPIES.c.channel.label("copy_channel"),
        _COPIES.c.ts.label("copy_ts"),
        _COPIES.c.escalated_to.label("copy_escalated_to"),
    )
    .select_from(_MESSAGES.outerjoin(_COPIES, _COPIES.c.message_id == _MESSAGES.c.id))
    .order_by(_MESSAGES.c.created_at, _MESSAGES.c.id, _COPIES.c.created_at)
)
"""Messages, each with its copies (an outer join: a message without copies comes once, with none)."""
_SHOWN_OF_CALL = _WITH_COPIES.where(
    _MESSAGES.c.run_id == bindparam("b_run"), _MESSAGES.c.tool_call_id == bindparam("b_call")
)
_EVERY_MESSAGE = (
    select(_MESSAGES.c.ts.label("own_ts"), _COPIES.c.channel, _COPIES.c.ts, _COPIES.c.escalated_to)
    .select_from(_MESSAGES.outerjoin(_COPIES, _COPIES.c.message_id == _MESSAGES.c.id))
    .where(_MESSAGES.c.id == bindparam("b_ref"))
    .order_by(_COPIES.c.created_at)
)
OPEN_APPROVAL = and_(_MESSAGES.c.kind == "approval", _MESSAGES.c.closed_at.is_(None))
"""An approval message not yet closed (what an App Home shows)."""
_OPEN_IN_THREAD = _WITH_COPIES.where(_MESSAGES.c.thread_id == bindparam("b_thread"), _MESSAGES.c.closed_at.is_(None))
_OPEN_IN_THREAD_WITH_CALL = _WITH_COPIES.where(
    _MESSAGES.c.thread_id == bindparam("b_thread"),
    or_(
        _MESSAGES.c.closed_at.is_(None),
        and_(_MESSAGES.c.run_id == bindparam("b_run"), _MESSAGES.c.tool_call_id == bindparam("b_call")),
    ),
)
