"""Reading and writing runs, their messages and their tool calls.

Every change of a tool call's state goes through `transition`, a conditional UPDATE: the row moves
only if it is still in a state it may leave, and the caller learns whether it won.

The runtime's path (a run, its steps, decisions, results) is written with plain SQL statements on a
connection (`Storage.transaction`), one transaction per state transition, and read outside any write
transaction (`Storage.read`): no ORM unit of work on the way of every approval.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import and_, bindparam, exists, func, insert, literal_column, or_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from ._audit import SYSTEM
from ._grants import check_grant_policy
from ._reconnect import retried_while_away
from .defaults import SUSPENDED_RUNS_COUNTED_AHEAD
from .exceptions import CommitOutcomeUnknownError, RunTakenOverError, ThreadOwnerError
from .records import StoredRun, StoredToolCall, values_of
from .states import (
    CALL_STARTS_IN,
    IN_PROGRESS_STATES,
    RUN_STARTS_IN,
    SETTLED_STATES,
    UNFINISHED_RUN_STATUSES,
    WAITING_STATES,
    NextMove,
    RunStatus,
    ToolCallState,
    run_sources_of,
    sources_of,
)
from .tables import AuditRow, GrantRow, MessageRow, PolicyRow, RunRow, ThreadRow, ToolCallRow, utcnow

if TYPE_CHECKING:
    from ._database import Database

RUNS, MESSAGES, CALLS, AUDIT = RunRow.__table__, MessageRow.__table__, ToolCallRow.__table__, AuditRow.__table__
POLICIES = PolicyRow.__table__


@retried_while_away
class RunStore:
    def __init__(self, storage: Database):
        self._storage = storage
        self._insert_thread = (  # the dialect's INSERT (ON CONFLICT), built once like the statements below
            storage.dialect.insert(ThreadRow.__table__)
            .values(id=bindparam("b_thread"), resource_id=bindparam("b_owner"))
            .on_conflict_do_nothing(index_elements=[ThreadRow.id])
            .returning(ThreadRow.id)
        )

    # --- runs -------------------------------------------------------------------------------
    async def create_run(
        self, run: StoredRun, messages: Iterable[dict[str, Any]] = (), *, new_thread: bool = False
    ) -> None:
        """Store a new run (in `RUN_STARTS_IN`) with its first messages; with `new_thread`, also its thread
        (`run.thread_id`, belonging to `run.resource_id`; `open_thread` found none), in the same transaction."""
        if run.status != RUN_STARTS_IN:
            raise ValueError(f"a run is stored {RUN_STARTS_IN}, not {run.status}")
        async with self._storage.transaction() as connection:
            if new_thread and run.thread_id is not None:
                await self._create_thread(connection, run.thread_id, run.resource_id)
            await connection.execute(_INSERT_RUN, _new_row_values(run))
            await _add_messages(connection, run, messages)

    async def get_run(self, run_id: str) -> StoredRun | None:
        async with self._storage.read() as connection:
            row = (await connection.execute(_RUN, {"b_run": run_id})).first()
        return StoredRun(**row._mapping) if row is not None else None

    async def run_and_call(
        self, run_id: str, tool_call_id: str | None
    ) -> tuple[StoredRun | None, StoredToolCall | None]:
        """A run and one of its calls (with no `tool_call_id`, the call that waits latest), read together."""
        async with self._storage.read() as connection:
            row = (await connection.execute(_RUN, {"b_run": run_id})).first()
            if row is None:
                return None, None
            statement = _LATEST_WAITING if tool_call_id is None else _CALL
            call = (await connection.execute(statement, {"b_run": run_id, "b_call": tool_call_id})).first()
        return StoredRun(**row._mapping), StoredToolCall(**call._mapping) if call is not None else None

    async def move_run(
        self,
        run: StoredRun,
        to: RunStatus,
        *,
        only_from: Iterable[RunStatus] | None = None,
        from_step: int | None = None,
        messages: Iterable[dict[str, Any]] = (),
        **fields: Any,
    ) -> bool:
        """Move a run to `to` if its status may go there (optionally only from `only_from`, and only while its
        stored step is `from_step`); True if this caller won.

        `messages` (the model's final answer) are stored in the same transaction, only if it won. A final
        answer passes the step it answers as `from_step`: the fence of `record_step`.
        """
        sources = run_sources_of(to)
        if only_from is not None:
            sources = [s for s in sources if s in {str(o) for o in only_from}]
        now = self._storage.clock.now()
        values = {"status": str(to), "updated_at": now, **fields}
        if to == RunStatus.RUNNING:
            values.setdefault("heartbeat_at", now)
        statement, fence = _move_run(frozenset(sources)), {"b_run": run.id}
        if from_step is not None:
            statement, fence["b_step"] = statement.where(_AT_STEP), from_step
        try:
            async with self._storage.transaction() as connection:
                result = await connection.execute(statement, {**fence, **values})
                won = result.rowcount == 1
                if won:
                    await _add_messages(connection, run, messages)
        except CommitOutcomeUnknownError:
            # read back what was written: this move's own time stamp tells whether its commit went through
            stored = await self.get_run(run.id)
            won = stored is not None and stored.status == values["status"] and _same_time(stored.updated_at, now)
            if not won and stored is not None and stored.status in sources and stored.status != values["status"]:
                # not stored, and the run is where it was: the move is conditional, so trying it again is safe
                return await self.move_run(
                    run, to, only_from=only_from, from_step=from_step, messages=messages, **fields
                )
        if won:
            for key, value in values.items():
                setattr(run, key, value)
        return won

    async def after_work(self, run: StoredRun, owner: str, *, holds_run: bool) -> NextMove:
        """What follows a worker's calls of the current step: see `_after_work`."""
        async with self._storage.transaction() as connection:
            await self._take_turn(connection, run)
            return await self._after_work(connection, run, owner, holds_run=holds_run)

    async def _take_turn(self, connection: AsyncConnection, run: StoredRun) -> None:
        """Wait for the other transactions that settle calls of `run` (see `_after_work`). On SQLite the
        write lock of BEGIN IMMEDIATE already does; on PostgreSQL the run's row lock, taken first (a lock
        taken after inserting rows that reference the run would deadlock two settlers)."""
        await self._storage.dialect.take_row_lock(connection, _LOCK_RUN, {"b_run": run.id})

    async def _after_work(
        self, connection: AsyncConnection, run: StoredRun, owner: str, *, holds_run: bool
    ) -> NextMove:
        """`CONTINUE` (`owner` goes on with the run: its step is settled), `SUSPENDED` (a call of the step
        still waits or works; the run is parked if `owner` held it), or `HANDED_OFF` (another process goes on).

        Whoever settles the last call of a step continues the run. The processes that settle calls of one
        run take turns here (SQLite: one writer at a time; PostgreSQL: the run's row lock), so the last of
        them sees every other's result, and the conditional claim lets only one go on. The caller has
        taken its turn (`_take_turn`).
        """
        now = self._storage.clock.now()
        if holds_run:  # park the run while a call of its step is left; else go on
            to: dict[str, Any] = {"status": str(RunStatus.SUSPENDED), "suspended_at": now, "owner": None}
        else:  # claim the run if every call of its step is settled
            to = {"status": str(RunStatus.RUNNING), "owner": owner, "heartbeat_at": now}
        statement = _PARK_RUN if holds_run else _CLAIM_SETTLED_RUN
        moved = await connection.execute(statement, {"b_run": run.id, "updated_at": now, **to})
        if moved.rowcount == 1:
            for key, value in to.items():
                setattr(run, key, value)
            return NextMove.SUSPENDED if holds_run else NextMove.CONTINUE
        if holds_run:
            return NextMove.CONTINUE
        # not claimed: a call of the step is left, or another process claimed the run first
        unsettled = await connection.scalar(_STEP_UNSETTLED, {"b_run": run.id, "b_step": run.step})
        return NextMove.SUSPENDED if unsettled else NextMove.HANDED_OFF

    async def held_calls(self, owner: str, keys: Iterable[tuple[str, str]]) -> dict[tuple[str, str], StoredToolCall]:
        """The calls among `keys` (run id, tool call id) that `owner` still holds live (`held_by`), by key."""
        keys = list(keys)
        if not keys:
            return {}
        statement = select(CALLS).where(
            CALLS.c.held_by == owner, or_(*(and_(CALLS.c.run_id == r, CALLS.c.tool_call_id == c) for r, c in keys))
        )
        async with self._storage.read() as connection:
            rows = [StoredToolCall(**row._mapping) for row in await connection.execute(statement)]
        return {(row.run_id, row.tool_call_id): row for row in rows}

    async def heartbeat(self, run_id: str, owner: str) -> None:
        """Refresh the run's lease: a process is still working on it."""
        now = self._storage.clock.now()
        async with self._storage.session() as session:
            await session.execute(
                update(RunRow)
                .where(RunRow.id == run_id, _one_of(RunRow.status, UNFINISHED_RUN_STATUSES))
                .values(heartbeat_at=now, owner=owner)
            )

    async def mark_previews_started(self, run: StoredRun, fingerprints: Iterable[str]) -> None:
        """Record, before they run, the calls (by args fingerprint) whose previews start at the step `run` is
        making (`runs.previews_started`, see `memory.tables`). Fenced like `record_step`: a worker whose run
        another process took over gets `RunTakenOverError`, and runs no preview."""
        started = {"step": run.step, "calls": sorted(set(fingerprints))}
        async with self._storage.transaction() as connection:
            marked = await connection.execute(
                _move_run(frozenset({str(RunStatus.RUNNING)})).where(_AT_STEP),
                {"b_run": run.id, "b_step": run.step - 1, "previews_started": started},
            )
            if marked.rowcount != 1:
                raise RunTakenOverError(f"run {run.id} went on in another process: its previews are not run here")
        run.previews_started = started

    # --- recovery ---------------------------------------------------------------------------
    async def stale_runs(self, agent_id: str, *, stale_before: datetime, limit: int = 100) -> list[str]:
        """Top-level runs of one agent whose lease is older than `stale_before` and that have work in progress.

        Work in progress: the run is `running` (a model call, or calls between steps); or a call of
        its current step is pending, decided but not started, or started; or it is `suspended` while
        no call of its current step waits for anyone (it stopped before it went on); or a call of its
        current step is a live suspension (`held_by`), guarded by the lease of the process that holds it.
        """
        current_step = and_(ToolCallRow.run_id == RunRow.id, ToolCallRow.step == RunRow.step)
        in_progress = exists().where(
            current_step,
            or_(_one_of(ToolCallRow.state, IN_PROGRESS_STATES), ToolCallRow.held_by.is_not(None)),
        )
        waiting = exists().where(current_step, _one_of(ToolCallRow.state, WAITING_STATES))
        statement = (
            select(RunRow.id)
            .where(
                RunRow.agent_id == agent_id,
                RunRow.parent_run_id.is_(None),
                _one_of(RunRow.status, UNFINISHED_RUN_STATUSES),
                or_(RunRow.heartbeat_at.is_(None), RunRow.heartbeat_at < stale_before),
                or_(RunRow.status == str(RunStatus.RUNNING), in_progress, ~waiting),
            )
            .order_by(RunRow.heartbeat_at)
            .limit(limit)
        )
        async with self._storage.read_session() as session:
            return list(await session.scalars(statement))

    async def take_over(self, run_id: str, *, stale_before: datetime, owner: str) -> StoredRun | None:
        """Take a run whose lease went stale; exactly one of several recovering processes wins it."""
        async with self._storage.transaction() as connection:
            taken = await connection.execute(
                update(RUNS)
                .where(
                    RUNS.c.id == run_id,
                    _one_of(RUNS.c.status, UNFINISHED_RUN_STATUSES),
                    or_(RUNS.c.heartbeat_at.is_(None), RUNS.c.heartbeat_at < stale_before),
                )
                .values(heartbeat_at=self._storage.clock.now(), owner=owner)
                .returning(*RUNS.c)
            )
            row = taken.first()
        return StoredRun(**row._mapping) if row is not None else None

    # --- messages ---------------------------------------------------------------------------
    async def run_messages(self, run_id: str) -> list[dict[str, Any]]:
        async with self._storage.read() as connection:
            rows = await connection.execute(_RUN_MESSAGES, {"b_run": run_id})
            return [message_of(row) for row in rows]

    async def open_thread(self, thread_id: str, resource_id: str | None) -> bool:
        """Whether `thread_id` exists, once `resource_id` may use it: a thread belongs to its first resource
        (another gets `ThreadOwnerError`; a thread started without one takes `resource_id`). A thread that
        does not exist yet is created with its first run (`create_run(..., new_thread=True)`)."""
        async with self._storage.read() as connection:
            owner = await connection.scalar(_THREAD_OWNER, {"b_thread": thread_id})
        if owner is None:
            return False
        if resource_id is not None and owner != resource_id:  # ownerless, or (refused) another's
            async with self._storage.transaction() as connection:
                await self._claim_existing_thread(connection, thread_id, resource_id)
        return True

    async def _create_thread(self, connection: AsyncConnection, thread_id: str, resource_id: str | None) -> None:
        # one INSERT, not a read of the row the same transaction then writes; another replica that created
        # it first wins, and the thread is then checked as any existing one
        created = await connection.scalar(self._insert_thread, {"b_thread": thread_id, "b_owner": resource_id or ""})
        if created is None and resource_id is not None:
            await self._claim_existing_thread(connection, thread_id, resource_id)

    async def _claim_existing_thread(self, connection: AsyncConnection, thread_id: str, resource_id: str) -> None:
        owner = await connection.scalar(
            self._storage.dialect.locked(select(ThreadRow.resource_id).where(ThreadRow.id == thread_id))
        )
        if not owner:  # a thread started without an owner takes its first one
            await connection.execute(update(ThreadRow).where(ThreadRow.id == thread_id).values(resource_id=resource_id))
        elif owner != resource_id:
            raise ThreadOwnerError(
                f"thread {thread_id!r} belongs to resource {owner!r}, not {resource_id!r}; "
                "use the owner's resource_id or another thread"
            )

    # --- tool calls -------------------------------------------------------------------------
    async def record_step(
        self,
        run: StoredRun,
        reply: dict[str, Any],
        calls: list[StoredToolCall],
        results: Iterable[dict[str, Any]] = (),
        audits: Iterable[tuple[StoredToolCall, Audit]] = (),
        *,
        suspend: bool = False,
    ) -> None:
        """Store one step at once: the model's reply, the run's step count, its calls and any immediate results;
        with `suspend` (nothing of the step is left for this worker to do, a call waits) the run is parked too.

        One transaction, so a crash never leaves a reply whose calls were not recorded.

        The step is a fence: `run.step` is the step the reply makes, and it is recorded only over the one
        before (the step the worker asked the model at). A worker that stalled past the run's lease while
        another process took the run over and recorded that step itself gets `RunTakenOverError`, and
        nothing of its reply is stored: two replies to one step (whose calls have different ids) would
        run the same request twice.
        """
        unstartable = [c.tool_call_id for c in calls if c.state not in CALL_STARTS_IN]
        if unstartable:
            raise ValueError(f"calls are stored in one of {sorted(CALL_STARTS_IN)}: not {unstartable}")
        now = self._storage.clock.now()
        values: dict[str, Any] = {"step": run.step, "heartbeat_at": now, "updated_at": now}
        statement = _move_run(frozenset({str(RunStatus.RUNNING)}))
        if suspend:
            values.update(status=str(RunStatus.SUSPENDED), suspended_at=now, owner=None)
            statement = _move_run(frozenset(run_sources_of(RunStatus.SUSPENDED)))
        async with self._storage.transaction() as connection:
            await _add_messages(connection, run, [reply])
            fence = {"b_run": run.id, "b_step": run.step - 1}
            moved = await connection.execute(statement.where(_AT_STEP), {**fence, **values})
            if moved.rowcount != 1:  # rolled back: nothing of the step is stored
                raise RunTakenOverError(
                    f"run {run.id} went on in another process while this one was stalled: "
                    f"step {run.step} is not recorded here"
                )
            for call in calls:
                inserted = await connection.execute(_INSERT_CALL, _new_row_values(call, now))
                call.id = inserted.inserted_primary_key[0]
            await _add_messages(connection, run, results)
            audit_rows = [audit.values(call, {}) for call, audit in audits]
            if audit_rows:
                await connection.execute(_INSERT_AUDIT, audit_rows)
        for key, value in values.items():
            setattr(run, key, value)

    async def get_tool_call(self, run_id: str, tool_call_id: str) -> StoredToolCall | None:
        async with self._storage.read() as connection:
            row = (await connection.execute(_CALL, {"b_run": run_id, "b_call": tool_call_id})).first()
        return StoredToolCall(**row._mapping) if row is not None else None

    async def latest_waiting_call(self, run_id: str) -> StoredToolCall | None:
        async with self._storage.read() as connection:
            row = (await connection.execute(_LATEST_WAITING, {"b_run": run_id})).first()
        return StoredToolCall(**row._mapping) if row is not None else None

    async def call_ids(self, run_id: str) -> set[str]:
        async with self._storage.read() as connection:
            return set(await connection.scalars(select(CALLS.c.tool_call_id).where(CALLS.c.run_id == run_id)))

    async def run_calls(self, run_id: str) -> list[StoredToolCall]:
        """Every tool call of the run, in the order the model made them."""
        async with self._storage.read() as connection:
            rows = await connection.execute(
                select(CALLS).where(CALLS.c.run_id == run_id).order_by(CALLS.c.step, CALLS.c.position)
            )
            return [StoredToolCall(**row._mapping) for row in rows]

    async def step_calls(self, run_id: str, step: int) -> list[StoredToolCall]:
        async with self._storage.read() as connection:
            rows = await connection.execute(
                select(CALLS).where(CALLS.c.run_id == run_id, CALLS.c.step == step).order_by(CALLS.c.position)
            )
            return [StoredToolCall(**row._mapping) for row in rows]

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
        **fields: Any,
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
        """
        async with self._storage.transaction() as connection:
            if grant is not None:
                await check_grant_policy(connection, self._storage.dialect, grant)
            won = await self._transition(
                connection, call, to, allowed_from, messages, run, audit, lease, fields, approvals_seen=approvals_seen
            )
            if won and grant is not None:
                await connection.execute(_INSERT_GRANT, [grant])
            return won

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
        async with self._storage.transaction() as connection:
            result = await connection.execute(
                _COUNT_APPROVAL, {"b_id": call.id, "b_seen": seen, "b_fp": call.fingerprint, **values}
            )
            if result.rowcount != 1:
                return False
            await connection.execute(_INSERT_AUDIT, [audit.values(call, {})])
            if lease is not None:
                await connection.execute(_UPDATE_RUN, {"b_run": call.run_id, "heartbeat_at": now, "owner": lease})
        for key, value in values.items():
            setattr(call, key, value)
        return True

    async def start(self, call: StoredToolCall, **fields: Any) -> tuple[bool, int | None]:
        """Mark `call` running (the durable "the tool started" mark) unless an admin's policy disables
        its tool; (True, None) if this caller may run it now, (False, version) when the disable stopped
        it (`version`: of the policy that did), (False, None) when another caller took the call.

        The policy read and the mark are one conditional UPDATE (`... AND NOT EXISTS (a disabling
        policy)`): on PostgreSQL the statement's snapshot holds every transaction committed before it
        began, on SQLite the write lock orders it after every committed change, so a disable that
        committed first always wins, and no transaction is added to the approval cycle.
        """
        async with self._storage.transaction() as connection:
            if await self._transition(
                connection, call, ToolCallState.RUNNING, None, (), None, None, None, fields, unless_disabled=True
            ):
                return True, None
            row = (await connection.execute(_WHY_NOT_STARTED, {"b_id": call.id, "b_tool": call.tool_name})).first()
        still_startable = row is not None and row.state in sources_of(ToolCallState.RUNNING, None)
        if still_startable and row.disabled_by is not None:
            return False, row.disabled_by
        return False, None

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
        **fields: Any,
    ) -> tuple[bool, NextMove | None]:
        """`transition` a call to its result, and in the same transaction decide what follows (`_after_work`):
        (True, the `NextMove`), or (False, None) when it was settled elsewhere."""
        async with self._storage.transaction() as connection:
            await self._take_turn(connection, run)
            if not await self._transition(connection, call, to, None, messages, run, audit, None, fields):
                return False, None
            return True, await self._after_work(connection, run, owner, holds_run=holds_run)

    async def _transition(
        self,
        connection: AsyncConnection,
        call: StoredToolCall,
        to: ToolCallState,
        allowed_from: Iterable[ToolCallState] | None,
        messages: Iterable[dict[str, Any]],
        run: StoredRun | None,
        audit: Audit | Iterable[Audit] | None,
        lease: str | None,
        fields: dict[str, Any],
        *,
        unless_disabled: bool = False,
        approvals_seen: int | None = None,
    ) -> bool:
        sources = sources_of(to, frozenset(allowed_from) if allowed_from is not None else None)
        now = self._storage.clock.now()
        values = {"state": str(to), "updated_at": now, **fields}
        if to in WAITING_STATES and "suspended_at" not in fields:
            values["suspended_at"] = now
        if "suspend_payload" in fields and "interrupted" not in fields:
            values["interrupted"] = False  # a new wait is an interruption only when the move says so
        messages = list(messages)
        if unless_disabled:
            statement, params = _start_call(frozenset(sources)), {"b_id": call.id, "b_tool": call.tool_name}
        else:
            statement, params = _move_call(frozenset(sources)), {"b_id": call.id}
        if approvals_seen is not None:
            statement = statement.where(_APPROVALS_AS_SEEN)
            params.update(b_seen=approvals_seen, b_fp=call.fingerprint)
        result = await connection.execute(statement, {**params, **values})
        if result.rowcount != 1:
            return False
        if messages:
            assert run is not None, "messages belong to a run"
            await _add_messages(connection, run, messages)
        audit_rows = [line.values(call, values) for line in ([audit] if isinstance(audit, Audit) else audit or ())]
        if audit_rows:
            await connection.execute(_INSERT_AUDIT, audit_rows)
        if lease is not None:
            await connection.execute(_UPDATE_RUN, {"b_run": call.run_id, "heartbeat_at": now, "owner": lease})
        for key, value in values.items():
            setattr(call, key, value)
        return True

    async def approvals_waiting_since(
        self, agent_id: str, tool_name: str, *, before: datetime, limit: int = 100
    ) -> list[tuple[str, str]]:
        """(run id, tool call id) of the top-level calls of one agent that wait for approval of `tool_name`
        (as a human sees it) since before `before`: what the expiry sweep declines."""
        statement = (
            select(ToolCallRow.run_id, ToolCallRow.tool_call_id)
            .join(RunRow, RunRow.id == ToolCallRow.run_id)
            .where(
                ToolCallRow.agent_id == agent_id,
                ToolCallRow.state == str(ToolCallState.AWAITING_APPROVAL),
                func.coalesce(ToolCallRow.shown_tool_name, ToolCallRow.tool_name) == tool_name,
                ToolCallRow.suspended_at < before,
                RunRow.parent_run_id.is_(None),
            )
            .order_by(ToolCallRow.suspended_at)
            .limit(limit)
        )
        async with self._storage.read_session() as session:
            return [(row.run_id, row.tool_call_id) for row in await session.execute(statement)]

    async def approvals_to_escalate(
        self, agent_id: str, tool_name: str, *, before: datetime, limit: int = 100
    ) -> list[tuple[str, str, datetime]]:
        """(run id, tool call id, waiting since) of the top-level calls of one agent that wait for approval
        of `tool_name` since before `before` and whose current wait was not escalated: what the
        escalation sweep brings to its policy's `escalate_to`."""
        statement = (
            select(ToolCallRow.run_id, ToolCallRow.tool_call_id, ToolCallRow.suspended_at)
            .join(RunRow, RunRow.id == ToolCallRow.run_id)
            .where(
                ToolCallRow.agent_id == agent_id,
                ToolCallRow.state == str(ToolCallState.AWAITING_APPROVAL),
                func.coalesce(ToolCallRow.shown_tool_name, ToolCallRow.tool_name) == tool_name,
                ToolCallRow.suspended_at < before,
                _NOT_ESCALATED,
                RunRow.parent_run_id.is_(None),
            )
            .order_by(ToolCallRow.suspended_at)
            .limit(limit)
        )
        async with self._storage.read_session() as session:
            return [(row.run_id, row.tool_call_id, row.suspended_at) for row in await session.execute(statement)]

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
                _NOT_ESCALATED,
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

    # --- discovery --------------------------------------------------------------------------
    async def suspended_runs(
        self,
        agent_id: str,
        *,
        thread_id: str | None,
        resource_id: str | None,
        page: int,
        per_page: int,
    ) -> tuple[list[tuple[StoredRun, list[StoredToolCall]]], int, bool]:
        """Top-level runs of one agent with a call that waits for a human, newest first, with those calls;
        and their total, counted up to `SUSPENDED_RUNS_COUNTED_AHEAD` past the page (whether it is exact)."""
        waiting = exists().where(ToolCallRow.run_id == RunRow.id, _one_of(ToolCallRow.state, WAITING_STATES))
        conditions = [
            RunRow.agent_id == agent_id,
            _one_of(RunRow.status, UNFINISHED_RUN_STATUSES),
            RunRow.parent_run_id.is_(None),
            waiting,  # a run is listed while a call of it waits for a human, and only then
        ]
        if thread_id is not None:
            conditions.append(RunRow.thread_id == thread_id)
        if resource_id is not None:
            conditions.append(RunRow.resource_id == resource_id)
        async with self._storage.read() as connection:
            counted_up_to = (page + 1) * per_page + SUSPENDED_RUNS_COUNTED_AHEAD
            # The count walks the page's own index in the page's order (by agent, thread or user; see
            # migrations 0004 and 0010) and stops `counted_up_to` past the start: without the order the
            # planner may read every run of the user (PostgreSQL's bitmap scan) or of the table first.
            newest_first = (RunRow.suspended_at.desc(), RunRow.id)
            some = select(RunRow.id).where(and_(*conditions)).order_by(*newest_first).limit(counted_up_to + 1)
            total = await connection.scalar(select(func.count()).select_from(some.subquery()))
            page_of_runs = select(RUNS).where(and_(*conditions)).order_by(*newest_first)
            runs = [
                StoredRun(**row._mapping)
                for row in await connection.execute(page_of_runs.offset(page * per_page).limit(per_page))
            ]
            calls: dict[str, list[StoredToolCall]] = {run.id: [] for run in runs}
            if runs:
                rows = await connection.execute(
                    select(CALLS)
                    .where(CALLS.c.run_id.in_(list(calls)), _one_of(CALLS.c.state, WAITING_STATES))
                    .order_by(CALLS.c.step, CALLS.c.position)
                )
                for row in rows:
                    calls[row.run_id].append(StoredToolCall(**row._mapping))
            total = total or 0
            return [(run, calls[run.id]) for run in runs], total, total <= counted_up_to

    async def waiting_calls_in_thread(self, thread_id: str) -> list[StoredToolCall]:
        """Every call of the thread still waiting, approvals included, oldest first: one indexed query."""
        async with self._storage.read() as connection:
            rows = await connection.execute(_WAITING_IN_THREAD, {"b_thread": thread_id})
            return [StoredToolCall(**row._mapping) for row in rows]

    async def stored_bytes(self, run_id: str) -> int:
        """Bytes stored for one run: its row, its messages and its tool calls, as JSON."""
        async with self._storage.read_session() as session:
            rows: list[Any] = [await session.get(RunRow, run_id)]
            rows += list(await session.scalars(select(MessageRow).where(MessageRow.run_id == run_id)))
            rows += list(await session.scalars(select(ToolCallRow).where(ToolCallRow.run_id == run_id)))
        return sum(len(_row_json(row)) for row in rows if row is not None)


# --- the statements of the runtime's path, built once (SQLAlchemy then finds each compiled in its cache) ---
_RUN = select(RUNS).where(RUNS.c.id == bindparam("b_run"))
_THREAD_OWNER = select(ThreadRow.resource_id).where(ThreadRow.id == bindparam("b_thread"))
_CALL = select(CALLS).where(CALLS.c.run_id == bindparam("b_run"), CALLS.c.tool_call_id == bindparam("b_call"))
_RUN_MESSAGES = select(MESSAGES).where(MESSAGES.c.run_id == bindparam("b_run")).order_by(MESSAGES.c.id)
_INSERT_GRANT = insert(GrantRow.__table__)

_NOT_ESCALATED = or_(ToolCallRow.escalated_at.is_(None), ToolCallRow.escalated_at < ToolCallRow.suspended_at)
"""The call's current wait was not escalated (an escalation of an earlier wait is older than this one)."""

_INSERT_RUN, _INSERT_CALL, _INSERT_MESSAGES, _INSERT_AUDIT = (
    insert(RUNS),
    insert(CALLS),
    insert(MESSAGES),
    insert(AUDIT),
)
_UPDATE_RUN = update(RUNS).where(RUNS.c.id == bindparam("b_run"))
"""Sets the columns given with `b_run`."""
_AT_STEP = RUNS.c.step == bindparam("b_step")
"""The fence of a step's outcome: the run is still at the step its worker asked the model at."""
_LOCK_RUN = select(RUNS.c.id).where(RUNS.c.id == bindparam("b_run")).with_for_update(key_share=True)
"""PostgreSQL's FOR NO KEY UPDATE: it does not wait for the key-share locks of rows inserted that reference the run."""


def _one_of(column: Any, states: Iterable[str]) -> Any:
    """`column IN ('a', 'b')` with the states written into the SQL: they are the code's own names, and a
    statement without a list parameter is compiled once (an expanding IN is rendered again on every call)."""
    names = sorted(str(state) for state in states)
    assert all(re.fullmatch(r"[a-z_]+", name) for name in names), names
    return column.in_([literal_column(f"'{name}'") for name in names])


_WAITING_IN_THREAD = (
    select(CALLS)
    .where(CALLS.c.thread_id == bindparam("b_thread"), _one_of(CALLS.c.state, WAITING_STATES))
    .order_by(CALLS.c.suspended_at, CALLS.c.id)
)


_LATEST_WAITING = (
    select(CALLS)
    .where(CALLS.c.run_id == bindparam("b_run"), _one_of(CALLS.c.state, WAITING_STATES))
    .order_by(CALLS.c.suspended_at.desc(), CALLS.c.id.desc())
    .limit(1)
)
_UNSETTLED = exists().where(
    CALLS.c.run_id == RUNS.c.id, CALLS.c.step == RUNS.c.step, ~_one_of(CALLS.c.state, SETTLED_STATES)
)
_STEP_UNSETTLED = select(
    exists().where(
        CALLS.c.run_id == bindparam("b_run"),
        CALLS.c.step == bindparam("b_step"),
        ~_one_of(CALLS.c.state, SETTLED_STATES),
    )
)
_PARK_RUN = _UPDATE_RUN.where(_one_of(RUNS.c.status, run_sources_of(RunStatus.SUSPENDED)), _UNSETTLED)
"""A worker parks its run while a call of the run's current step is not settled."""
_CLAIM_SETTLED_RUN = _UPDATE_RUN.where(_one_of(RUNS.c.status, run_sources_of(RunStatus.RUNNING)), ~_UNSETTLED)
"""A settler claims a parked run once every call of its current step is settled."""


@functools.cache
def _move_call(sources: frozenset[str]) -> Any:
    return update(CALLS).where(CALLS.c.id == bindparam("b_id"), _one_of(CALLS.c.state, sources))


_APPROVALS_AS_SEEN = and_(
    func.coalesce(CALLS.c.approval_count, 0) == bindparam("b_seen"), CALLS.c.fingerprint == bindparam("b_fp")
)
"""A four-eyes call still has exactly the approvals and the arguments its approver read."""
_COUNT_APPROVAL = _move_call(frozenset({str(ToolCallState.AWAITING_APPROVAL)})).where(_APPROVALS_AS_SEEN)
"""Count one approval of a call that waits for several (see `RunStore.count_approval`)."""

_DISABLES = and_(POLICIES.c.tool_name == bindparam("b_tool"), POLICIES.c.mode == literal_column("'disabled'"))
"""A policy disables the tool `b_tool`."""
_WHY_NOT_STARTED = select(
    CALLS.c.state, select(POLICIES.c.version).where(_DISABLES).scalar_subquery().label("disabled_by")
).where(CALLS.c.id == bindparam("b_id"))


@functools.cache
def _start_call(sources: frozenset[str]) -> Any:
    """`_move_call` to `running`, only while no policy disables the call's tool (see `RunStore.start`)."""
    return _move_call(sources).where(~exists().where(_DISABLES))


@functools.cache
def _move_run(sources: frozenset[str]) -> Any:
    return _UPDATE_RUN.where(_one_of(RUNS.c.status, sources))


@dataclass(frozen=True, kw_only=True)
class Audit:
    """One line of the audit trail (see `memory._audit`), written in the same transaction as the move it records."""

    action: str
    actor: str | None = None
    via: str = "runtime"
    detail: str | None = None
    policy_version: int | None = None
    before: Any = None
    """What the move changed, as it was (an edit: the arguments shown before)."""
    after: Any = None

    def values(self, call: StoredToolCall, moved: dict[str, Any]) -> dict[str, Any]:
        """The audit row, for `call` as it is after the move (`moved`: the values the move wrote)."""
        return {
            "run_id": call.run_id,
            "tool_call_id": call.tool_call_id,
            "tool_name": moved.get("shown_tool_name") or call.displayed_tool_name,
            "action": self.action,
            "actor": self.actor or SYSTEM,
            "via": self.via,
            "args_fingerprint": moved.get("fingerprint") or call.fingerprint,
            "policy_version": self.policy_version,
            "detail": self.detail,
            "before": self.before,
            "after": self.after,
            "at": utcnow(),
        }


def _same_time(stored: datetime | None, written: datetime) -> bool:
    """Whether a time stamp read back is the one written (databases differ in how they give the zone back)."""
    if stored is None:
        return False
    if (stored.tzinfo is None) != (written.tzinfo is None):
        stored, written = stored.replace(tzinfo=None), written.replace(tzinfo=None)
    return abs((stored - written).total_seconds()) < 1e-3


async def _add_messages(connection: AsyncConnection, run: StoredRun, messages: Iterable[dict[str, Any]]) -> None:
    thread_id = run.thread_id if run.uses_memory else None
    now = utcnow()
    rows = [
        {
            "run_id": run.id,
            "thread_id": thread_id,
            "role": message["role"],
            "content": message.get("content"),
            "tool_calls": message.get("tool_calls"),
            "tool_call_id": message.get("tool_call_id"),
            "created_at": now,
        }
        for message in messages
    ]
    if rows:
        await connection.execute(_INSERT_MESSAGES, rows)


def _new_row_values(row: StoredRun | StoredToolCall, now: datetime | None = None) -> dict[str, Any]:
    """The columns of a row built in memory, for its INSERT; its creation times are set on it too."""
    now = now or utcnow()
    for stamp in ("created_at", "updated_at"):
        if getattr(row, stamp) is None:
            setattr(row, stamp, now)
    values = values_of(row)
    if isinstance(row, StoredToolCall):
        del values["id"]  # the database numbers the row
    return values


def message_of(row: Any) -> dict[str, Any]:
    """The OpenAI chat message a row stores."""
    message: dict[str, Any] = {"role": row.role, "content": row.content}
    if row.tool_calls:
        message["tool_calls"] = row.tool_calls
    if row.tool_call_id is not None:
        message["tool_call_id"] = row.tool_call_id
    return message


def _row_json(row: Any) -> str:
    values = {column.key: getattr(row, column.key) for column in row.__table__.columns}
    return json.dumps(values, default=lambda v: v.isoformat() if isinstance(v, datetime) else str(v))


__all__ = ["Audit", "RunStore"]
