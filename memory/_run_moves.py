"""The moves of a run: storing it and its steps, moving its status, its lease, its thread (the part of
`RunStore` that writes runs)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any, Unpack

from sqlalchemy import or_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from ._policies import ToolPolicy
from ._reconnect import retried_while_away
from ._run_sql import (
    AUDIT,
    MESSAGES,
    RUNS,
    THREAD_AND_WAITING,
    THREAD_OWNER,
    THREADS,
    Audit,
    StorePart,
    claim_after_turn,
    inserted,
    message_rows,
    move_run,
    moved_with,
    new_row_values,
    next_move,
    one_of,
    read_run,
    run_call_and_policy_of,
    same_time,
    source_checked,
    take_turn,
    updated,
)
from .exceptions import CommitOutcomeUnknownError, RunTakenOverError, ThreadOwnerError
from .records import RunColumns, StoredRun, StoredToolCall
from .states import (
    CALL_STARTS_IN,
    RUN_STARTS_IN,
    UNFINISHED_RUN_STATUSES,
    WAITING_STATES,
    NextMove,
    RunStatus,
    run_sources_of,
)
from .tables import ThreadRow


@retried_while_away
class RunMoves(StorePart):
    """The part of `RunStore` that stores runs and moves them."""

    async def create_run(
        self, run: StoredRun, messages: Iterable[dict[str, Any]] = (), *, new_thread: bool = False
    ) -> None:
        """Store a new run (in `RUN_STARTS_IN`) with its first messages; with `new_thread`, also its thread
        (`run.thread_id`, belonging to `run.resource_id`; `open_thread` found none), in the same transaction."""
        if run.status != RUN_STARTS_IN:
            raise ValueError(f"a run is stored {RUN_STARTS_IN}, not {run.status}")
        dialect = self._storage.dialect
        rows = message_rows(run, messages)
        run_row = new_row_values(run)
        writes = [*inserted(dialect, RUNS, [run_row]), *inserted(dialect, MESSAGES, rows)]
        if not (new_thread and run.thread_id is not None):
            async with self._storage.statement() as connection:  # one statement, on PostgreSQL one round trip
                with source_checked(rows):
                    await dialect.together(connection, *writes)
            return
        # one INSERT, not a read of the row the same statement then writes
        thread = (
            dialect.insert(THREADS)
            .values(dialect.row(THREADS, {"id": run.thread_id, "resource_id": run.resource_id or ""}))
            .on_conflict_do_nothing(index_elements=[THREADS.c.id])
        )
        if not dialect.is_sqlite:
            # the run and its messages only if this statement created the thread: one round trip
            async with self._storage.statement() as connection:
                with source_checked(rows):
                    created, _keys = await moved_with(
                        dialect, connection, thread, rows=[(RUNS, [run_row]), (MESSAGES, rows)]
                    )
            if created:
                return
        # another replica created the thread first (or SQLite): it is then checked as any existing one, in the
        # transaction that stores the run
        thread = thread.returning(THREADS.c.id)
        async with self._storage.transaction() as connection:
            with source_checked(rows):
                inserted_threads, *_ = await dialect.together(connection, thread, *writes)
            if not inserted_threads and run.resource_id is not None:
                await self._claim_existing_thread(connection, run.thread_id, run.resource_id)

    async def move_run(
        self,
        run: StoredRun,
        to: RunStatus,
        *,
        only_from: Iterable[RunStatus] | None = None,
        from_step: int | None = None,
        messages: Iterable[dict[str, Any]] = (),
        **fields: Unpack[RunColumns],
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
        values: dict[str, Any] = {"status": str(to), "updated_at": now, **fields}
        if to == RunStatus.RUNNING:
            values.setdefault("heartbeat_at", now)
        statement, fence = move_run(frozenset(sources), at_step=from_step is not None), dict[str, Any](b_run=run.id)
        if from_step is not None:
            fence["b_step"] = from_step
        rows = message_rows(run, messages)
        dialect = self._storage.dialect
        try:
            async with self._storage.statement() as connection:  # on PostgreSQL one statement, one round trip
                with source_checked(rows):
                    move = updated(dialect, statement, values, **fence)
                    won, _keys = await moved_with(dialect, connection, move, rows=[(MESSAGES, rows)])
        except CommitOutcomeUnknownError:
            # read back what was written: this move's own time stamp tells whether its commit went through
            stored = await read_run(self._storage, run.id)
            won = stored is not None and stored.status == values["status"] and same_time(stored.updated_at, now)
            if not won and stored is not None and stored.status in sources and stored.status != values["status"]:
                # not stored, and the run is where it was: the move is conditional, so trying it again is safe
                return await self.move_run(
                    run, to, only_from=only_from, from_step=from_step, messages=messages, **fields
                )
        if won:
            for key, value in values.items():
                setattr(run, key, value)
        return won

    async def after_work(
        self, run: StoredRun, owner: str, *, holds_run: bool, settled_in_turn: bool = False
    ) -> NextMove:
        """What follows a worker's calls of the current step: see `memory._run_sql.next_move`.
        `settled_in_turn`: this process, not holding the run, just settled a call in the run's turn
        (`transition(..., in_turn=True)`), so the claim is one statement (`memory._run_sql.claim_after_turn`)."""
        if settled_in_turn and not holds_run:
            return await claim_after_turn(self._storage, run, owner)
        async with self._storage.transaction() as connection:
            await take_turn(self._storage, connection, run)
            return await next_move(self._storage, connection, run, owner=owner, holds_run=holds_run)

    async def heartbeat(self, run_id: str, owner: str) -> None:
        """Refresh the run's lease: a process is still working on it."""
        now = self._storage.clock.now()
        async with self._storage.statement(idempotent=True) as connection:  # an UPDATE to a value
            await connection.execute(
                update(RUNS)
                .where(RUNS.c.id == run_id, one_of(RUNS.c.status, UNFINISHED_RUN_STATUSES))
                .values(heartbeat_at=now, owner=owner)
            )

    async def mark_previews_started(self, run: StoredRun, fingerprints: Iterable[str]) -> None:
        """Record, before they run, the calls (by args fingerprint) whose previews start at the step `run` is
        making (`runs.previews_started`, see `memory.tables`). Fenced like `record_step`: a worker whose run
        another process took over gets `RunTakenOverError`, and runs no preview."""
        started = {"step": run.step, "calls": sorted(set(fingerprints))}
        async with self._storage.statement() as connection:
            marked = await connection.execute(
                move_run(frozenset({str(RunStatus.RUNNING)}), at_step=True),
                {"b_run": run.id, "b_step": run.step - 1, "previews_started": started},
            )
            if marked.rowcount != 1:
                raise RunTakenOverError(f"run {run.id} went on in another process: its previews are not run here")
        run.previews_started = started

    async def take_over(self, run_id: str, *, stale_before: datetime, owner: str) -> StoredRun | None:
        """Take a run whose lease went stale; exactly one of several recovering processes wins it."""
        async with self._storage.transaction() as connection:
            taken = await connection.execute(
                update(RUNS)
                .where(
                    RUNS.c.id == run_id,
                    one_of(RUNS.c.status, UNFINISHED_RUN_STATUSES),
                    or_(RUNS.c.heartbeat_at.is_(None), RUNS.c.heartbeat_at < stale_before),
                )
                .values(heartbeat_at=self._storage.clock.now(), owner=owner)
                .returning(*RUNS.c)
            )
            row = taken.first()
        return StoredRun(**row._mapping) if row is not None else None

    async def open_thread(self, thread_id: str, resource_id: str | None) -> bool:
        """Whether `thread_id` exists, once `resource_id` may use it: a thread belongs to its first resource
        (another gets `ThreadOwnerError`; a thread started without one takes `resource_id`). A thread that
        does not exist yet is created with its first run (`create_run(..., new_thread=True)`)."""
        async with self._storage.read() as connection:
            owner = await connection.scalar(THREAD_OWNER, {"b_thread": thread_id})
        if owner is None:
            return False
        if resource_id is not None and owner != resource_id:  # ownerless, or (refused) another's
            async with self._storage.transaction() as connection:
                await self._claim_existing_thread(connection, thread_id, resource_id)
        return True

    async def open_thread_with_waits(
        self, thread_id: str, resource_id: str | None
    ) -> tuple[bool, list[tuple[StoredRun, StoredToolCall, ToolPolicy]]]:
        """`open_thread`, and in the same read the calls that wait in the thread (oldest first), each with its
        run and its tool's policy: what a turn in an existing thread reads before it answers a waiting call
        or starts a run."""
        async with self._storage.read() as connection:
            rows = (await connection.execute(THREAD_AND_WAITING, {"b_thread": thread_id})).all()
        if not rows:
            return False, []
        if resource_id is not None and rows[0].thread_owner != resource_id:  # ownerless, or (refused) another's
            async with self._storage.transaction() as connection:
                await self._claim_existing_thread(connection, thread_id, resource_id)
        waits = []
        for row in rows:
            run, call, policy = run_call_and_policy_of(row._mapping)
            if call is not None and policy is not None:
                waits.append((run, call, policy))
        return True, waits

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

    async def record_step(
        self,
        run: StoredRun,
        reply: dict[str, Any],
        calls: list[StoredToolCall],
        *,
        results: Iterable[dict[str, Any]] = (),
        audits: Iterable[tuple[StoredToolCall, Audit]] = (),
        suspend: bool = False,
    ) -> None:
        """Store one step at once: the model's reply, the run's step count, its calls and any immediate results;
        with `suspend` (nothing of the step is left for this worker to do, a call waits) the run is parked too.

        One statement (`memory._run_sql.moved_with`), so a crash never leaves a reply whose calls were not recorded.

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
        statement = move_run(frozenset({str(RunStatus.RUNNING)}), at_step=True)
        if suspend:
            values.update(status=str(RunStatus.SUSPENDED), suspended_at=now, owner=None)
            statement = move_run(frozenset(run_sources_of(RunStatus.SUSPENDED)), at_step=True)
        dialect = self._storage.dialect
        rows = message_rows(run, [reply, *results])  # the reply first: the model reads them in this order
        fenced = updated(dialect, statement, values, b_run=run.id, b_step=run.step - 1)
        audit_rows = [audit.values(call, {}, now) for call, audit in audits]
        for call in calls:
            if call.state in WAITING_STATES:  # its wait starts now, on the storage's clock
                call.suspended_at = now
        call_rows = [new_row_values(call, now) for call in calls]
        async with self._storage.statement() as connection:  # on PostgreSQL one statement, one round trip
            with source_checked(rows):
                won, keys = await moved_with(
                    dialect, connection, fenced, rows=[(MESSAGES, rows), (AUDIT, audit_rows)], numbered=call_rows
                )
        if not won:  # nothing of the step is stored
            raise RunTakenOverError(
                f"run {run.id} went on in another process while this one was stalled: "
                f"step {run.step} is not recorded here"
            )
        for call in calls:
            call.id = keys[call.tool_call_id]
        for key, value in values.items():
            setattr(run, key, value)
