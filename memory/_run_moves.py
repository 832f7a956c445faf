"""The moves of a run: storing it and its steps, moving its status, its lease, its thread (the part of
`RunStore` that writes runs)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any, Unpack

from sqlalchemy import bindparam, or_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from ._reconnect import retried_while_away
from ._run_sql import (
    AT_STEP,
    INSERT_AUDIT,
    INSERT_CALL,
    INSERT_RUN,
    RUNS,
    THREAD_OWNER,
    Audit,
    StorePart,
    add_messages,
    move_run,
    new_row_values,
    next_move,
    one_of,
    read_run,
    same_time,
    take_turn,
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
from .tables import RunRow, ThreadRow

if TYPE_CHECKING:
    from ._database import Database


@retried_while_away
class RunMoves(StorePart):
    """The part of `RunStore` that stores runs and moves them."""

    def __init__(self, storage: Database) -> None:
        super().__init__(storage)
        self._insert_thread = (  # the dialect's INSERT (ON CONFLICT), built once like the statements
            storage.dialect.insert(ThreadRow.__table__)
            .values(id=bindparam("b_thread"), resource_id=bindparam("b_owner"))
            .on_conflict_do_nothing(index_elements=[ThreadRow.id])
            .returning(ThreadRow.id)
        )

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
            await connection.execute(INSERT_RUN, new_row_values(run))
            await add_messages(connection, run, messages)

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
        statement, fence = move_run(frozenset(sources)), dict[str, Any](b_run=run.id)
        if from_step is not None:
            statement, fence["b_step"] = statement.where(AT_STEP), from_step
        try:
            async with self._storage.transaction() as connection:
                result = await connection.execute(statement, {**fence, **values})
                won = result.rowcount == 1
                if won:
                    await add_messages(connection, run, messages)
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

    async def after_work(self, run: StoredRun, owner: str, *, holds_run: bool) -> NextMove:
        """What follows a worker's calls of the current step: see `memory._run_sql.next_move`."""
        async with self._storage.transaction() as connection:
            await take_turn(self._storage, connection, run)
            return await next_move(self._storage, connection, run, owner=owner, holds_run=holds_run)

    async def heartbeat(self, run_id: str, owner: str) -> None:
        """Refresh the run's lease: a process is still working on it."""
        now = self._storage.clock.now()
        async with self._storage.session() as session:
            await session.execute(
                update(RunRow)
                .where(RunRow.id == run_id, one_of(RunRow.status, UNFINISHED_RUN_STATUSES))
                .values(heartbeat_at=now, owner=owner)
            )

    async def mark_previews_started(self, run: StoredRun, fingerprints: Iterable[str]) -> None:
        """Record, before they run, the calls (by args fingerprint) whose previews start at the step `run` is
        making (`runs.previews_started`, see `memory.tables`). Fenced like `record_step`: a worker whose run
        another process took over gets `RunTakenOverError`, and runs no preview."""
        started = {"step": run.step, "calls": sorted(set(fingerprints))}
        async with self._storage.transaction() as connection:
            marked = await connection.execute(
                move_run(frozenset({str(RunStatus.RUNNING)})).where(AT_STEP),
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
        statement = move_run(frozenset({str(RunStatus.RUNNING)}))
        if suspend:
            values.update(status=str(RunStatus.SUSPENDED), suspended_at=now, owner=None)
            statement = move_run(frozenset(run_sources_of(RunStatus.SUSPENDED)))
        async with self._storage.transaction() as connection:
            await add_messages(connection, run, [reply])
            fence = {"b_run": run.id, "b_step": run.step - 1}
            moved = await connection.execute(statement.where(AT_STEP), {**fence, **values})
            if moved.rowcount != 1:  # rolled back: nothing of the step is stored
                raise RunTakenOverError(
                    f"run {run.id} went on in another process while this one was stalled: "
                    f"step {run.step} is not recorded here"
                )
            for call in calls:
                if call.state in WAITING_STATES:  # its wait starts now, on the storage's clock
                    call.suspended_at = now
                inserted = await connection.execute(INSERT_CALL, new_row_values(call, now))
                key = inserted.inserted_primary_key
                assert key is not None, "an INSERT of one row gives its key"
                call.id = key[0]
            await add_messages(connection, run, results)
            audit_rows = [audit.values(call, {}, now) for call, audit in audits]
            if audit_rows:
                await connection.execute(INSERT_AUDIT, audit_rows)
        for key, value in values.items():
            setattr(run, key, value)
