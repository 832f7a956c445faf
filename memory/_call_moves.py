"""The moves of a tool call: every change of its state, a four-eyes approval counted, its start, its
result, and the claim of its escalation (the part of `RunStore` that writes tool calls).

Every change of a call's state is a conditional UPDATE: the row moves only if it is still in a state it
may leave, and the caller learns whether it won."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Unpack

from sqlalchemy import update

from ._grants import check_grant_policy
from ._reconnect import retried_while_away
from ._run_sql import (
    AUDIT,
    CALL_BY_ID,
    COUNT_APPROVAL,
    GRANTS,
    MESSAGES,
    NOT_ESCALATED,
    UPDATE_RUN,
    WHY_NOT_STARTED,
    Audit,
    StorePart,
    call_move,
    claim_after_turn,
    message_rows,
    moved_with,
    next_move,
    same_time,
    settled_and_claimed,
    source_checked,
    updated,
)
from .dialects import Prepared
from .exceptions import CommitOutcomeUnknownError, DatabaseAwayError
from .records import CallColumns, StartColumns, StoredRun, StoredToolCall
from .states import WAITING_STATES, NextMove, ToolCallState, sources_of
from .tables import ToolCallRow

if TYPE_CHECKING:
    from .dialects import Dialect

log = logging.getLogger("memory")


@retried_while_away
class CallMoves(StorePart):
    """The part of `RunStore` that moves tool calls."""

    async def transition(
        self,
        call: StoredToolCall,
        to: ToolCallState,
        *,
        allowed_from: Iterable[ToolCallState] | None = None,
        messages: Iterable[dict[str, Any]] = (),
        run: StoredRun | None = None,
        audit: Audit | Iterable[Audit] | None = None,
        lease: str | None = None,
        approvals_seen: int | None = None,
        grant: dict[str, Any] | None = None,
        since: datetime | None = None,
        in_turn: bool = False,
        **fields: Unpack[CallColumns],
    ) -> bool:
        """Move `call` to `to` if it is still in a state that may go there; True if this caller won.
        With `grant` (the row of a standing grant, `memory._grants.new_grant_values`) the grant is stored
        too, only if this caller won: the approval that gives a grant is counted once, and so is the grant.
        With `approvals_seen` (the last approval a four-eyes call needs) it moves only while exactly that
        many approvals are counted and its arguments are still those of `call.fingerprint`.

        In the same transaction, only if it won: `messages` are added to `run` (a tool result the model
        will read), an `audit` row is written, and with `lease` (an owner) the run's lease is refreshed.
        On success the in-memory `call` is updated too, so the caller goes on with what was stored.
        Raises `GrantNotAllowedError`, storing nothing, when `grant`'s policy is no longer at the version
        it was checked against (a grant holds only under the policy it was given under).

        `since`: the call moves only if nothing moved it after that time (its `updated_at`): a result is
        stored with the time of the caller's own "started" mark, so an execution whose process stalled while
        the recovery interrupted the call (and it was approved and run again) stores nothing when it wakes.

        `in_turn`: the move holds the run's row lock when it commits, so that a claim of the run in a statement
        of its own right after it sees it (`memory._run_sql.claim_after_turn`). The lease's UPDATE of the run
        takes that lock (after the call's row, as every decision does: no two of them wait for each other);
        without a lease, the statement takes it first (`memory._run_sql.take_turn`).

        The move and what goes with it are one statement (`memory._run_sql.moved_with`): in autocommit, one
        round trip on PostgreSQL (with a `grant`, in a transaction that first checks the grant's policy). When
        the connection drops meanwhile, the call is read back: the move's own time stamp says whether it was
        stored, and a call still where it was is moved again (the move is conditional, so that is safe).
        """
        for _attempt in range(3):
            move = self._move(
                call, to, allowed_from=allowed_from, fields=fields, approvals_seen=approvals_seen, since=since
            )
            rows, updates = self._with_move(move, messages=messages, run=run, audit=audit, lease=lease)
            if grant is not None:
                rows.append((GRANTS, [grant]))
            in_turn_of = call.run_id if in_turn and lease is None else None
            try:
                return await self._written(move, rows, updates, grant=grant, in_turn_of=in_turn_of)
            except CommitOutcomeUnknownError:
                if (stored := await self._stored_after_loss(move)) is not None:
                    return move.won() if stored else False
        raise CommitOutcomeUnknownError(f"call {call.tool_call_id} of run {call.run_id}: its move was not confirmed")

    async def _stored_after_loss(self, move: _Move) -> bool | None:
        """After a connection lost while `move` ran: True if it was stored (the call bears the move's own time
        stamp), False if the call left the states it could move from (another caller moved it), None if it is
        still where it was (moving it again is safe: the move is conditional)."""
        async with self._storage.read() as connection:
            stored = (await connection.execute(CALL_BY_ID, {"b_id": move.call.id})).first()
        if stored is not None and stored.state == move.values["state"] and same_time(stored.updated_at, move.now):
            return True
        if stored is None or stored.state not in move.sources:
            return False
        log.info("call %s: the database went away while it moved; moving it again", move.call.tool_call_id)
        return None

    async def _written(
        self,
        move: _Move,
        rows: list[tuple[Any, list[dict[str, Any]]]],
        updates: list[Any],
        *,
        grant: Any,
        in_turn_of: str | None,
    ) -> bool:
        dialect = self._storage.dialect
        opened = self._storage.statement() if grant is None else self._storage.transaction()
        async with opened as connection:
            if grant is not None:
                await check_grant_policy(connection, dialect, grant)
            with source_checked(move.message_rows):
                won, _keys = await moved_with(
                    dialect, connection, move.bound(dialect), rows=rows, updates=updates, in_turn_of=in_turn_of
                )
        return move.won() if won else False

    async def count_approval(
        self, call: StoredToolCall, approval: dict[str, Any], *, audit: Audit, lease: str | None = None
    ) -> bool:
        """Count one more approval of a call that needs several (four eyes), the call staying where it
        waits; True if this caller's approval counted.

        One conditional UPDATE: it counts only while the call still waits for approval, with exactly the
        approvals this caller read (`call.approval_count`) and the arguments it was shown (`call.fingerprint`),
        so two approvers at the same moment (two replicas) never both count as the same one; the loser
        reads again and retries. The audit line is written in the same transaction."""
        seen = call.approval_count or 0
        approvals = [*(call.approvals or []), approval]
        now = self._storage.clock.now()
        values = {"approvals": approvals, "approval_count": seen + 1, "updated_at": now}
        dialect = self._storage.dialect
        count = updated(dialect, COUNT_APPROVAL, values, b_id=call.id, b_seen=seen, b_fp=call.fingerprint)
        updates = []
        if lease is not None:
            updates.append(updated(dialect, UPDATE_RUN, {"heartbeat_at": now, "owner": lease}, b_run=call.run_id))
        async with self._storage.statement() as connection:
            won, _keys = await moved_with(
                dialect, connection, count, rows=[(AUDIT, [audit.values(call, {}, now)])], updates=updates
            )
        if not won:
            return False
        for key, value in values.items():
            setattr(call, key, value)
        return True

    async def start(self, call: StoredToolCall, **fields: Unpack[StartColumns]) -> tuple[bool, int | None]:
        """Mark `call` running (the durable "the tool started" mark) unless an admin's policy disables
        its tool; (True, None) if this caller may run it now, (False, version) when the disable stopped
        it (`version`: of the policy that did), (False, None) when another caller took the call.

        The policy read and the mark are one conditional UPDATE (`... AND NOT EXISTS (a disabling
        policy)`): on PostgreSQL the statement's snapshot holds every transaction committed before it
        began, on SQLite the write lock orders it after every committed change, so a disable that
        committed first always wins, and no transaction is added to the approval cycle.
        """
        move = self._move(call, ToolCallState.RUNNING, fields=fields, unless_disabled=True)
        async with self._storage.statement() as connection:  # commits before `execute` runs
            if (await self._storage.dialect.run(connection, Prepared(move.statement, move.params))).rowcount == 1:
                return move.won(), None
            row = (await connection.execute(WHY_NOT_STARTED, {"b_id": call.id, "b_tool": call.tool_name})).first()
        if row is None or row.state not in sources_of(ToolCallState.RUNNING, None):
            return False, None  # another caller took it
        return False, row.disabled_by

    async def store_result_and_next_move(
        self,
        call: StoredToolCall,
        to: ToolCallState,
        *,
        run: StoredRun,
        messages: Iterable[dict[str, Any]],
        audit: Audit,
        owner: str,
        holds_run: bool,
        since: datetime | None = None,
        **fields: Unpack[CallColumns],
    ) -> tuple[bool, NextMove | None]:
        """`transition` a call to its result, and decide what follows (`memory._run_sql.next_move`): (True, the
        `NextMove`), or (False, None) when it was settled elsewhere; (True, None) when the result is stored but
        the database went away before the run's next move was made (the caller makes it: `after_work`).

        On SQLite, and for the run's worker (`holds_run`: it parks the run, or goes on), one transaction that
        takes the run's turn first. On PostgreSQL another process's result is stored in the run's turn in one
        statement that commits by itself and claims the run when that is due (`_settled_in_turn`): one round
        trip, where BEGIN, the result, the claim and COMMIT are four; a claim it could not tell is made in the
        next statement (`claim_after_turn`)."""
        dialect = self._storage.dialect
        if not holds_run and not dialect.is_sqlite:
            stored, claimed = await self._settled_in_turn(call, to, run=run, messages=messages, audit=audit,
                                                          owner=owner, since=since, fields=fields)  # fmt: skip
            if not stored:
                return False, None
            if claimed:
                return True, NextMove.CONTINUE
            try:
                return True, await claim_after_turn(self._storage, run, owner)
            except CommitOutcomeUnknownError:
                raise  # claimed or not: the run is left to recovery
            except DatabaseAwayError:  # nothing of the claim is stored; trying all of this again would not claim
                log.info("run %s: the database went away before its claim; it is made again", run.id)
                return True, None
        move = self._move(call, to, fields=fields, since=since)
        rows, updates = self._with_move(move, messages=messages, run=run, audit=audit)
        async with self._storage.transaction() as connection:
            # the run's lock first, then the result, in one statement; the next move in the next one, which
            # sees every result committed while this waited for the lock
            with source_checked(move.message_rows):
                won, _keys = await moved_with(
                    dialect, connection, move.bound(dialect), rows=rows, updates=updates, in_turn_of=run.id
                )
            if not won:
                return False, None
            move.won()
            return True, await next_move(self._storage, connection, run, owner=owner, holds_run=holds_run)

    async def _settled_in_turn(
        self,
        call: StoredToolCall,
        to: ToolCallState,
        *,
        run: StoredRun,
        messages: Iterable[dict[str, Any]],
        audit: Audit,
        owner: str,
        since: datetime | None,
        fields: CallColumns,
    ) -> tuple[bool, bool]:
        """On PostgreSQL, another process's result stored in the run's turn, with the claim of the run when it is
        due before the statement began (`memory._run_sql.settled_and_claimed`): whether it was stored, and
        whether the run was claimed. One statement that commits by itself; a connection lost meanwhile is
        told as `transition` tells it, and a result found stored then leaves its claim unknown."""
        dialect = self._storage.dialect
        for _attempt in range(3):
            move = self._move(call, to, fields=fields, since=since)
            rows, updates = self._with_move(move, messages=messages, run=run, audit=audit)
            try:
                async with self._storage.statement() as connection:
                    with source_checked(move.message_rows):
                        won, claimed = await settled_and_claimed(
                            dialect, connection, call, move.bound(dialect), run=run, owner=owner, now=move.now,
                            rows=rows, updates=updates,
                        )  # fmt: skip
            except CommitOutcomeUnknownError:
                if (stored := await self._stored_after_loss(move)) is None:
                    continue
                if stored:
                    move.won()
                    raise  # stored, and the run claimed or not: the run is left to recovery
                return False, False
            return (move.won(), claimed) if won else (False, False)
        raise CommitOutcomeUnknownError(f"call {call.tool_call_id} of run {call.run_id}: its move was not confirmed")

    def _move(
        self,
        call: StoredToolCall,
        to: ToolCallState,
        *,
        allowed_from: Iterable[ToolCallState] | None = None,
        fields: CallColumns | StartColumns,
        unless_disabled: bool = False,
        approvals_seen: int | None = None,
        since: datetime | None = None,
    ) -> _Move:
        """The conditional UPDATE that moves `call` to `to` (see `transition`), not yet run."""
        sources = sources_of(to, frozenset(allowed_from) if allowed_from is not None else None)
        now = self._storage.clock.now()
        values: dict[str, Any] = {"state": str(to), "updated_at": now, **fields}
        if to in WAITING_STATES and "suspended_at" not in fields:
            values["suspended_at"] = now
        if "suspend_payload" in fields and "interrupted" not in fields:
            values["interrupted"] = False  # a new wait is an interruption only when the move says so
        where: dict[str, Any] = {"b_id": call.id}
        if unless_disabled:
            where["b_tool"] = call.tool_name
        if approvals_seen is not None:
            where.update(b_seen=approvals_seen, b_fp=call.fingerprint)
        if since is not None:
            where["b_since"] = since
        statement = call_move(
            frozenset(sources),
            unless_disabled=unless_disabled,
            as_seen=approvals_seen is not None,
            unmoved=since is not None,
        )
        return _Move(call=call, statement=statement, where=where, values=values, now=now, sources=frozenset(sources))

    def _with_move(
        self,
        move: _Move,
        *,
        messages: Iterable[dict[str, Any]] = (),
        run: StoredRun | None = None,
        audit: Audit | Iterable[Audit] | None = None,
        lease: str | None = None,
    ) -> tuple[list[tuple[Any, list[dict[str, Any]]]], list[Any]]:
        """The writes that go with `move`, only if it wins (see `memory._run_sql.moved_with`): the rows of
        `messages` added to `run` and of the `audit` lines; the update of the run's lease taken by `lease`."""
        dialect, call, now = self._storage.dialect, move.call, move.now
        messages = list(messages)
        if messages:
            assert run is not None, "messages belong to a run"
            move.message_rows = message_rows(run, messages)
        lines = [audit] if isinstance(audit, Audit) else list(audit or ())
        rows = [(MESSAGES, move.message_rows), (AUDIT, [line.values(call, move.values, now) for line in lines])]
        updates = []
        if lease is not None:
            updates.append(updated(dialect, UPDATE_RUN, {"heartbeat_at": now, "owner": lease}, b_run=call.run_id))
        return rows, updates

    async def claim_escalation(self, run_id: str, tool_call_id: str, *, waiting_since: datetime, at: datetime) -> bool:
        """Take on escalating this wait of the call: one conditional UPDATE (still waiting for approval, in
        the same wait, not escalated), so of several replicas exactly one escalates it; True if this one."""
        statement = (
            update(ToolCallRow)
            .where(
                ToolCallRow.run_id == run_id,
                ToolCallRow.tool_call_id == tool_call_id,
                ToolCallRow.state == str(ToolCallState.AWAITING_APPROVAL),
                ToolCallRow.suspended_at == waiting_since,
                NOT_ESCALATED,
            )
            .values(escalated_at=at)
        )
        async with self._storage.transaction() as connection:
            return (await connection.execute(statement)).rowcount == 1

    async def release_escalation(self, run_id: str, tool_call_id: str, *, claimed_at: datetime) -> bool:
        """Give back a claim whose delivery failed for now (Slack 429/5xx), so a later sweep tries again;
        only the claim made at `claimed_at` is given back."""
        statement = (
            update(ToolCallRow)
            .where(
                ToolCallRow.run_id == run_id,
                ToolCallRow.tool_call_id == tool_call_id,
                ToolCallRow.escalated_at == claimed_at,
            )
            .values(escalated_at=None)
        )
        async with self._storage.transaction() as connection:
            return (await connection.execute(statement)).rowcount == 1


@dataclass(kw_only=True)
class _Move:
    """One conditional UPDATE of a call (`CallMoves._move`), to run alone or `together` with what goes with it."""

    call: StoredToolCall
    statement: Any
    where: dict[str, Any]
    """The values of the statement's `b_...` binds."""
    values: dict[str, Any]
    """What the move sets."""
    now: datetime
    sources: frozenset[str]
    """The states the call may move from."""
    message_rows: list[dict[str, Any]] = field(default_factory=list)
    """The messages that go with it (see `memory._run_sql.source_checked`)."""

    @property
    def params(self) -> dict[str, Any]:
        return {**self.where, **self.values}

    def bound(self, dialect: Dialect) -> Any:
        """The statement with its values bound, for `Dialect.together`."""
        return updated(dialect, self.statement, self.values, **self.where)

    def won(self) -> bool:
        """The move was stored: the in-memory call takes what it wrote, so the caller goes on with what was stored."""
        for key, value in self.values.items():
            setattr(self.call, key, value)
        return True
