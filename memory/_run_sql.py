"""What the parts of `RunStore` share: the statements of the runtime's path, built once (SQLAlchemy then
finds each compiled in its cache), the audit line a move writes, and the small steps several moves take
(adding messages, a run's next move after a worker's calls)."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from sqlalchemy import and_, bindparam, exists, func, insert, literal_column, or_, select, union_all, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql import visitors

from ._audit import SYSTEM
from ._policies import ToolPolicy, policy_of
from .dialects import Prepared
from .exceptions import MessageTakenError
from .records import StoredRun, StoredToolCall, values_of
from .states import SETTLED_STATES, WAITING_STATES, NextMove, RunStatus, ToolCallState, run_sources_of
from .tables import AuditRow, GrantRow, MessageRow, PolicyRow, RunRow, ThreadRow, ToolCallRow, utcnow

if TYPE_CHECKING:
    from ._database import Database
    from .dialects import Dialect

RUNS, MESSAGES, CALLS, AUDIT = RunRow.__table__, MessageRow.__table__, ToolCallRow.__table__, AuditRow.__table__
POLICIES, GRANTS, THREADS = PolicyRow.__table__, GrantRow.__table__, ThreadRow.__table__


class StorePart:
    """One part of `RunStore`: the database it works on."""

    def __init__(self, storage: Database) -> None:
        self._storage = storage


RUN = select(RUNS).where(RUNS.c.id == bindparam("b_run"))
THREAD_OWNER = select(ThreadRow.resource_id).where(ThreadRow.id == bindparam("b_thread"))
CALL = select(CALLS).where(CALLS.c.run_id == bindparam("b_run"), CALLS.c.tool_call_id == bindparam("b_call"))
CALL_BY_ID = select(CALLS.c.state, CALLS.c.updated_at).where(CALLS.c.id == bindparam("b_id"))
RUN_MESSAGES = select(MESSAGES).where(MESSAGES.c.run_id == bindparam("b_run")).order_by(MESSAGES.c.id)

NOT_ESCALATED = or_(ToolCallRow.escalated_at.is_(None), ToolCallRow.escalated_at < ToolCallRow.suspended_at)
"""The call's current wait was not escalated (an escalation of an earlier wait is older than this one)."""

INSERT_MESSAGES = insert(MESSAGES)
INSERT_CALLS_NUMBERED = insert(CALLS).returning(CALLS.c.id, sort_by_parameter_order=True)
"""Calls inserted in one statement (given as a list of rows), their keys returned in the order of the rows."""
UPDATE_RUN = update(RUNS).where(RUNS.c.id == bindparam("b_run"))
"""Sets the columns given with `b_run`."""
AT_STEP = RUNS.c.step == bindparam("b_step")
"""The fence of a step's outcome: the run is still at the step its worker asked the model at."""
LOCK_RUN = select(RUNS.c.id).where(RUNS.c.id == bindparam("b_run")).with_for_update(key_share=True)
"""PostgreSQL's FOR NO KEY UPDATE: it does not wait for the key-share locks of rows inserted that reference the run."""


def one_of(column: Any, states: Iterable[str]) -> Any:
    """`column IN ('a', 'b')` with the states written into the SQL: they are the code's own names, and a
    statement without a list parameter is compiled once (an expanding IN is rendered again on every call)."""
    names = sorted(str(state) for state in states)
    assert all(re.fullmatch(r"[a-z_]+", name) for name in names), names
    return column.in_([literal_column(f"'{name}'") for name in names])


WAITING_IN_THREAD = (
    select(CALLS)
    .where(CALLS.c.thread_id == bindparam("b_thread"), one_of(CALLS.c.state, WAITING_STATES))
    .order_by(CALLS.c.suspended_at, CALLS.c.id)
)


LATEST_WAITING = (
    select(CALLS)
    .where(CALLS.c.run_id == bindparam("b_run"), one_of(CALLS.c.state, WAITING_STATES))
    .order_by(CALLS.c.suspended_at.desc(), CALLS.c.id.desc())
    .limit(1)
)


def _run_call_and_policy(latest_waiting: bool) -> Any:
    """The run `b_run`, its call `b_call` (with `latest_waiting`, the one that waits latest) and that call's
    policy (of `displayed_tool_name`), in one row; the call's and the policy's columns NULL when there is none."""
    if latest_waiting:
        waiting = CALLS.alias("waiting")
        latest = (
            select(waiting.c.id)
            .where(waiting.c.run_id == bindparam("b_run"), one_of(waiting.c.state, WAITING_STATES))
            .order_by(waiting.c.suspended_at.desc(), waiting.c.id.desc())
            .limit(1)
            .scalar_subquery()
        )
        which = CALLS.c.id == latest
    else:
        which = CALLS.c.tool_call_id == bindparam("b_call")
    shown_name = func.coalesce(CALLS.c.shown_tool_name, CALLS.c.tool_name)
    joined = RUNS.outerjoin(CALLS, and_(CALLS.c.run_id == RUNS.c.id, which)).outerjoin(
        POLICIES, POLICIES.c.tool_name == shown_name
    )
    return select(RUNS, CALLS, POLICIES).select_from(joined).where(RUNS.c.id == bindparam("b_run"))


RUN_CALL_AND_POLICY = {False: _run_call_and_policy(False), True: _run_call_and_policy(True)}
"""By whether the call is the one that waits latest (no tool call id given): see `_run_call_and_policy`."""


def _thread_and_waiting() -> Any:
    """The thread `b_thread` (its owner) and each call of it that waits, with its run and its policy (of
    `displayed_tool_name`), oldest first: one row with NULL calls when none waits, no row when there is no thread."""
    waiting = and_(CALLS.c.thread_id == THREADS.c.id, one_of(CALLS.c.state, WAITING_STATES))
    shown_name = func.coalesce(CALLS.c.shown_tool_name, CALLS.c.tool_name)
    joined = (
        THREADS.outerjoin(CALLS, waiting)
        .outerjoin(RUNS, RUNS.c.id == CALLS.c.run_id)
        .outerjoin(POLICIES, POLICIES.c.tool_name == shown_name)
    )
    return (
        select(THREADS.c.resource_id.label("thread_owner"), RUNS, CALLS, POLICIES)
        .select_from(joined)
        .where(THREADS.c.id == bindparam("b_thread"))
        .order_by(CALLS.c.suspended_at, CALLS.c.id)
    )


THREAD_AND_WAITING = _thread_and_waiting()


def run_call_and_policy_of(values: Any) -> tuple[StoredRun, StoredToolCall | None, ToolPolicy | None]:
    """The run, the call (None: no such call) and its tool's policy (the defaults when none is stored) of one
    row of `RUN_CALL_AND_POLICY` or `THREAD_AND_WAITING` (its `_mapping`)."""
    run = StoredRun(**{column.key: values[column] for column in RUNS.c})
    if values[CALLS.c.id] is None:
        return run, None, None
    call = StoredToolCall(**{column.key: values[column] for column in CALLS.c})
    if values[POLICIES.c.tool_name] is None:
        return run, call, ToolPolicy(tool_name=call.displayed_tool_name)
    return run, call, policy_of(SimpleNamespace(**{column.key: values[column] for column in POLICIES.c}))


UNSETTLED = exists().where(
    CALLS.c.run_id == RUNS.c.id, CALLS.c.step == RUNS.c.step, ~one_of(CALLS.c.state, SETTLED_STATES)
)
STEP_UNSETTLED = select(
    exists().where(
        CALLS.c.run_id == bindparam("b_run"),
        CALLS.c.step == bindparam("b_step"),
        ~one_of(CALLS.c.state, SETTLED_STATES),
    )
)
HELD_BY = select(
    exists().where(
        RUNS.c.id == bindparam("b_run"),
        RUNS.c.owner == bindparam("b_owner"),
        RUNS.c.status == literal_column(f"'{RunStatus.RUNNING}'"),
    )
)
"""The run is still at work on behalf of `b_owner` (no other process took it over)."""
PARK_RUN = UPDATE_RUN.where(
    one_of(RUNS.c.status, run_sources_of(RunStatus.SUSPENDED)), RUNS.c.owner == bindparam("b_owner"), UNSETTLED
)
"""A worker parks its run while a call of the run's current step is not settled (and the run is still its own:
a worker that stalled while another took the run over parks nothing)."""
CLAIM_SETTLED_RUN = UPDATE_RUN.where(one_of(RUNS.c.status, run_sources_of(RunStatus.RUNNING)), AT_STEP, ~UNSETTLED)
"""A settler claims a parked run once every call of its current step (`b_step`, the one it settled a call of) is
settled."""
CLAIM_WITH_SETTLE = UPDATE_RUN.where(
    one_of(RUNS.c.status, run_sources_of(RunStatus.RUNNING)),
    AT_STEP,
    ~UNSETTLED.where(CALLS.c.id != bindparam("b_settled")),
)
"""`CLAIM_SETTLED_RUN` in the statement that settles the call `b_settled`: the statement sees that call as it was
before it, so every other call of the step must be settled (`settled_and_claimed`)."""


@functools.cache
def move_call(sources: frozenset[str]) -> Any:
    return update(CALLS).where(CALLS.c.id == bindparam("b_id"), one_of(CALLS.c.state, sources))


APPROVALS_AS_SEEN = and_(
    func.coalesce(CALLS.c.approval_count, 0) == bindparam("b_seen"), CALLS.c.fingerprint == bindparam("b_fp")
)
"""A four-eyes call still has exactly the approvals and the arguments its approver read."""
UNMOVED_SINCE = CALLS.c.updated_at == bindparam("b_since")
"""Nothing moved the call since the time this caller's own move left on it (see `RunStore.transition`'s `since`)."""
COUNT_APPROVAL = move_call(frozenset({str(ToolCallState.AWAITING_APPROVAL)})).where(APPROVALS_AS_SEEN)
"""Count one approval of a call that waits for several (see `RunStore.count_approval`)."""

DISABLES = and_(POLICIES.c.tool_name == bindparam("b_tool"), POLICIES.c.mode == literal_column("'disabled'"))
"""A policy disables the tool `b_tool`."""
WHY_NOT_STARTED = select(
    CALLS.c.state, select(POLICIES.c.version).where(DISABLES).scalar_subquery().label("disabled_by")
).where(CALLS.c.id == bindparam("b_id"))


@functools.cache
def start_call(sources: frozenset[str]) -> Any:
    """`move_call` to `running`, only while no policy disables the call's tool (see `RunStore.start`)."""
    return move_call(sources).where(~exists().where(DISABLES))


@functools.cache
def move_run(sources: frozenset[str], *, at_step: bool = False) -> Any:
    """The conditional UPDATE of a run from `sources`; `at_step`: fenced by its step (`AT_STEP`, `b_step`). Built
    once each, as every statement of the runtime's path (a statement built per call is compiled, or its cache key
    computed, per call)."""
    statement = UPDATE_RUN.where(one_of(RUNS.c.status, sources))
    return statement.where(AT_STEP) if at_step else statement


@functools.cache
def call_move(
    sources: frozenset[str], *, unless_disabled: bool = False, as_seen: bool = False, unmoved: bool = False
) -> Any:
    """The conditional UPDATE of a call from `sources` (`CallMoves._move`), built once each: to `running` only
    while no policy disables it (`unless_disabled`, `start_call`), only with the approvals and arguments seen
    (`as_seen`, `APPROVALS_AS_SEEN`), only if nothing moved it since (`unmoved`, `UNMOVED_SINCE`)."""
    statement = start_call(sources) if unless_disabled else move_call(sources)
    if as_seen:
        statement = statement.where(APPROVALS_AS_SEEN)
    return statement.where(UNMOVED_SINCE) if unmoved else statement


@dataclass(frozen=True, kw_only=True)
class Audit:
    """One line of the audit trail (see `memory._audit`), written in the same transaction as the move it records."""

    action: str
    actor: str | None = None
    on_behalf_of: str | None = None
    """Whom the actor stood in for (a delegation); None: on their own behalf."""
    via: str = "runtime"
    detail: str | None = None
    policy_version: int | None = None
    before: Any = None
    """What the move changed, as it was (an edit: the arguments shown before)."""
    after: Any = None

    def values(self, call: StoredToolCall, moved: dict[str, Any], at: datetime) -> dict[str, Any]:
        """The audit row, for `call` as it is after the move (`moved`: the values the move wrote), at `at`
        (the storage's clock, as every stamp a sweep or the approval analytics compare)."""
        return {
            "run_id": call.run_id,
            "tool_call_id": call.tool_call_id,
            "tool_name": moved.get("shown_tool_name") or call.displayed_tool_name,
            "action": self.action,
            "actor": self.actor or SYSTEM,
            "on_behalf_of": self.on_behalf_of,
            "via": self.via,
            "args_fingerprint": moved.get("fingerprint") or call.fingerprint,
            "policy_version": self.policy_version,
            "detail": self.detail,
            "before": self.before,
            "after": self.after,
            "at": at,
        }


def same_time(stored: datetime | None, written: datetime) -> bool:
    """Whether a time stamp read back is the one written (databases differ in how they give the zone back)."""
    if stored is None:
        return False
    if (stored.tzinfo is None) != (written.tzinfo is None):
        stored, written = stored.replace(tzinfo=None), written.replace(tzinfo=None)
    return abs((stored - written).total_seconds()) < 1e-3


SOURCE_ID = "source_id"
"""The key of a user message (as given to `add_messages`) naming the front end's message it came from; stored in
`messages.source_id`, never sent to the model (messages read back are built from their columns)."""


def with_source_id(messages: Iterable[dict[str, Any]], source_id: str | None) -> list[dict[str, Any]]:
    """`messages` to store, their last user message naming `source_id` (the front end's id of the message it came
    from: a thread stores each source once); a copy, so what the model is sent carries no such key."""
    marked = [dict(message) for message in messages]
    users = [message for message in marked if message.get("role") == "user"]
    if source_id is not None and users:
        users[-1][SOURCE_ID] = source_id
    return marked


async def add_messages(connection: AsyncConnection, run: StoredRun, messages: Iterable[dict[str, Any]]) -> None:
    """Store `messages` of `run` (in its thread, with memory). A message with a `SOURCE_ID` already taken in the
    thread raises `MessageTakenError`, and the caller's transaction stores nothing."""
    rows = message_rows(run, messages)
    if not rows:
        return
    with source_checked(rows):
        await connection.execute(INSERT_MESSAGES, rows)


def message_rows(run: StoredRun, messages: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of `messages` of `run` (in its thread, with memory), as `add_messages` stores them."""
    thread_id = run.thread_id if run.uses_memory else None
    now = utcnow()
    return [
        {
            "run_id": run.id,
            "thread_id": thread_id,
            "role": message["role"],
            "content": message.get("content"),
            "tool_calls": message.get("tool_calls"),
            "tool_call_id": message.get("tool_call_id"),
            "source_id": message.get(SOURCE_ID) if thread_id is not None else None,
            "created_at": now,
        }
        for message in messages
    ]


@contextmanager
def source_checked(rows: list[dict[str, Any]]) -> Iterator[None]:
    """Around a write of message `rows`: a message whose `SOURCE_ID` is taken in its thread raises
    `MessageTakenError` (the statement stored nothing), not the driver's error."""
    try:
        yield
    except IntegrityError as exc:
        sources = [(row["thread_id"], row["source_id"]) for row in rows if row["source_id"] is not None]
        if sources and "source" in str(exc.orig):
            raise MessageTakenError(*sources[0]) from exc
        raise


def inserted(dialect: Dialect, table: Any, rows: Iterable[dict[str, Any]]) -> list[Any]:
    """The INSERT of `rows` into `table` for `Dialect.together` (each value a bind of its own): none when
    there are no rows. One row is a single-row VALUES, whose compiled form SQLAlchemy caches; it compiles a
    multi-row VALUES on every execution (about 0.3 ms for a message's row on SQLite). On SQLite the
    statement built once, `Prepared` with the rows (SQLAlchemy fills the columns' defaults)."""
    if dialect.is_sqlite:
        rows = list(rows)
        if len({frozenset(row) for row in rows}) > 1:  # one executemany takes rows of the same columns
            return [Prepared(_insert_into(table), row) for row in rows]
        return [Prepared(_insert_into(table), rows[0] if len(rows) == 1 else rows)] if rows else []
    bound = [dialect.row(table, row) for row in rows]
    if len(bound) == 1:
        return [insert(table).values(bound[0])]
    return [insert(table).values(bound)] if bound else []


@functools.cache
def _insert_into(table: Any) -> Any:
    return insert(table)


def updated(dialect: Dialect, statement: Any, values: dict[str, Any], **where: Any) -> Any:
    """`statement` (an UPDATE of `memory._run_sql`, its WHERE naming `b_...` binds) for `Dialect.together`:
    the binds given `where`, and `values` set, each a bind of its own; on SQLite `statement` itself,
    `Prepared` with them (SQLAlchemy sets the columns the parameters name, and their `onupdate`)."""
    if dialect.is_sqlite:
        return Prepared(statement, {**where, **values})
    return with_binds(statement, **where).values(dialect.row(statement.table, values, updating=True))


def with_binds(statement: Any, **where: Any) -> Any:
    """`statement` with its `b_...` binds given the values of `where` (a DML statement has no `params()`)."""

    def given(bind: Any) -> None:
        if bind.key in where:
            bind.value, bind.required = where[bind.key], False

    return visitors.cloned_traverse(statement, {"maintain_key": True}, {"bindparam": given})


def new_row_values(row: StoredRun | StoredToolCall, now: datetime | None = None) -> dict[str, Any]:
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


def row_json(row: Any) -> str:
    values = {column.key: getattr(row, column.key) for column in row.__table__.columns}
    return json.dumps(values, default=lambda v: v.isoformat() if isinstance(v, datetime) else str(v))


async def read_run(storage: Database, run_id: str) -> StoredRun | None:
    async with storage.read() as connection:
        row = (await connection.execute(RUN, {"b_run": run_id})).first()
    return StoredRun(**row._mapping) if row is not None else None


def turn_of(run_id: str) -> Any:
    """The lock `take_turn` takes, in the statement of a move `moved_with(..., in_turn_of=run_id)` makes."""
    return with_binds(LOCK_RUN, b_run=run_id)


async def take_turn(storage: Database, connection: AsyncConnection, run: StoredRun) -> None:
    """Wait for the other transactions that settle calls of `run` (see `next_move`). On SQLite the
    write lock of BEGIN IMMEDIATE already does; on PostgreSQL the run's row lock, taken first (a lock
    taken after inserting rows that reference the run would deadlock two settlers). `moved_with(...,
    in_turn_of=run.id)` takes it in the statement of the move."""
    await storage.dialect.take_row_lock(connection, LOCK_RUN, {"b_run": run.id})


async def next_move(
    storage: Database, connection: AsyncConnection, run: StoredRun, *, owner: str, holds_run: bool
) -> NextMove:
    """`CONTINUE` (`owner` goes on with the run: its step is settled), `SUSPENDED` (a call of the step
    still waits or works; the run is parked if `owner` held it), or `HANDED_OFF` (another process goes on).

    Whoever settles the last call of a step continues the run. The processes that settle calls of one
    run take turns (SQLite: one writer at a time; PostgreSQL: the run's row lock), so the last of them
    sees every other's result, and the conditional claim lets only one go on. Either the caller has taken
    its turn in this transaction (`take_turn`), before this statement's snapshot; or it claims in a
    statement of its own right after its settle committed in its turn (`claim_after_turn`).
    """
    now, dialect = storage.clock.now(), storage.dialect
    if holds_run:  # park the run while a call of its step is left; else go on
        parked = {"status": str(RunStatus.SUSPENDED), "suspended_at": now, "owner": None}
        park = Prepared(PARK_RUN, {"b_run": run.id, "updated_at": now, "b_owner": owner, **parked})
        moved = await dialect.run(connection, park)
        if moved.rowcount == 1:
            for key, value in parked.items():
                setattr(run, key, value)
            return NextMove.SUSPENDED
        # not parked: every call of the step is settled, so go on; unless the run is no longer this worker's
        if await connection.scalar(HELD_BY, {"b_run": run.id, "b_owner": owner}):
            return NextMove.CONTINUE
        # Taken over while this worker stalled: it must not ask the model for a step the new worker asks for too
        # (the claim's step fence). Or a process that decided a call of the step while this worker ran another
        # took the run's lease and parked it: this worker settled the last call, so it claims the run.
        return NextMove.CONTINUE if await _claimed(dialect, connection, run, owner, now) else NextMove.HANDED_OFF
    if await _claimed(dialect, connection, run, owner, now):
        return NextMove.CONTINUE
    # not claimed: a call of the step is left, or another process claimed the run first
    unsettled = await connection.scalar(STEP_UNSETTLED, {"b_run": run.id, "b_step": run.step})
    return NextMove.SUSPENDED if unsettled else NextMove.HANDED_OFF


def _claim_of(owner: str, now: datetime) -> dict[str, Any]:
    """What a claim of a parked run writes: running, for `owner`, its heartbeat `now`."""
    return {"status": str(RunStatus.RUNNING), "owner": owner, "heartbeat_at": now}


async def _claimed(dialect: Dialect, connection: AsyncConnection, run: StoredRun, owner: str, now: datetime) -> bool:
    """Claim the parked `run` for `owner` if every call of its step is settled (`CLAIM_SETTLED_RUN`)."""
    claim = _claim_of(owner, now)
    params = {"b_run": run.id, "b_step": run.step, "updated_at": now, **claim}
    if (await dialect.run(connection, Prepared(CLAIM_SETTLED_RUN, params))).rowcount != 1:
        return False
    for key, value in claim.items():
        setattr(run, key, value)
    return True


async def claim_after_turn(storage: Database, run: StoredRun, owner: str) -> NextMove:
    """`next_move` of a process that does not hold `run`, right after it settled a call in the run's turn:
    its settle held the run's row lock when it committed (`RunStore.transition(..., in_turn=True)`). On
    PostgreSQL the claim is then one statement in autocommit, with no lock of its own.

    Why that is enough, though a statement's snapshot is taken before it waits for a lock: the settles of one
    run commit one after another (each holds the run's row lock at its commit), and each settler claims after
    its own settle committed, so the last settler's claim sees every settle. The worker's park takes the same
    lock before the snapshot of its conditional UPDATE (`take_turn`, in a transaction): a settle that committed
    before the park took the lock is seen by the park (the worker goes on, and the settler's claim finds the run
    `running`); a settle that waited for the park's lock commits after the park, so its claim finds the run
    `suspended`. Only one claim of a parked run wins (`CLAIM_SETTLED_RUN` moves it out of `suspended`).
    """
    async with storage.statement() as connection:
        return await next_move(storage, connection, run, owner=owner, holds_run=False)


async def moved_with(
    dialect: Dialect,
    connection: AsyncConnection,
    move: Any,
    *,
    rows: Iterable[tuple[Any, list[dict[str, Any]]]] = (),
    updates: Iterable[Any] = (),
    numbered: list[dict[str, Any]] | None = None,
    in_turn_of: str | None = None,
) -> tuple[bool, dict[str, int]]:
    """`move` (a conditional UPDATE, its values bound: `updated`) and, only if it wrote its row, what goes with
    it: `rows` inserted (table, rows), `updates` (UPDATEs, values bound) and `numbered` (tool calls, whose keys
    are returned by tool call id). Whether the move won, and those keys.

    On PostgreSQL one statement, so in autocommit (`Storage.statement`) one round trip that stores all or
    nothing: the writes that go with the move select from its RETURNING (`WITH moved AS (UPDATE ...
    RETURNING 1), ... INSERT ... SELECT ... FROM moved`), so they write only if it did. None of them may read
    what another writes (they all see the database as it was before the statement). On SQLite the move, then
    the rest if it won, one after the other in the caller's transaction.

    `in_turn_of` (a run's id): the run's row lock taken before the move (`turn_of`, see `take_turn`); on
    PostgreSQL in the same statement, the move made only once it is held. SQLite's write lock already is that
    turn, so the lock's statement is built on PostgreSQL only."""
    rows = [(table, batch) for table, batch in rows if batch]
    updates = list(updates)
    if dialect.is_sqlite:
        if (await dialect.run(connection, move)).rowcount != 1:
            return False, {}
        await dialect.together(
            connection, *(s for table, batch in rows for s in inserted(dialect, table, batch)), *updates
        )
        keys: dict[str, int] = {}
        if numbered:
            # one call (a step's usual number) runs from its compiled form, like the writes above
            calls = Prepared(INSERT_CALLS_NUMBERED, numbered[0] if len(numbered) == 1 else numbered)
            written = (await dialect.run(connection, calls)).all()
            keys = {row["tool_call_id"]: key for row, (key,) in zip(numbered, written, strict=True)}
        return True, keys
    moved, _won, parts = _moved_and_parts(dialect, move, rows, updates, in_turn_of=in_turn_of)
    if numbered:
        calls = (
            _inserted_if(dialect, moved, CALLS, numbered).returning(CALLS.c.id, CALLS.c.tool_call_id).cte("numbered")
        )
        statement = select(calls.c.id, calls.c.tool_call_id).add_cte(*parts)
        keys = {tool_call_id: key for key, tool_call_id in await connection.execute(statement)}
        return bool(keys), keys
    statement = select(func.count()).select_from(moved).add_cte(*parts)
    return (await connection.execute(statement)).scalar_one() == 1, {}


def _moved_and_parts(
    dialect: Dialect,
    move: Any,
    rows: list[tuple[Any, list[dict[str, Any]]]],
    updates: list[Any],
    *,
    in_turn_of: str | None = None,
) -> tuple[Any, Any, list[Any]]:
    """On PostgreSQL, `move` (made once the row lock of the run `in_turn_of` is held, when given) as the CTE
    `moved`, the condition that it wrote its row, and the CTEs of what goes with it (see `moved_with`)."""
    if in_turn_of is not None:
        move = move.where(exists(select(literal_column("1")).select_from(turn_of(in_turn_of).cte("turn"))))
    moved = move.returning(literal_column("1").label("won")).cte("moved")
    won = exists(select(literal_column("1")).select_from(moved))
    parts = [
        _inserted_if(dialect, moved, table, batch).returning(literal_column("1")).cte(f"with_{n}")
        for n, (table, batch) in enumerate(rows)
    ]
    parts += [update.where(won).returning(literal_column("1")).cte(f"with_u{n}") for n, update in enumerate(updates)]
    return moved, won, parts


async def settled_and_claimed(
    dialect: Dialect,
    connection: AsyncConnection,
    call: StoredToolCall,
    move: Any,
    *,
    run: StoredRun,
    owner: str,
    now: datetime,
    rows: Iterable[tuple[Any, list[dict[str, Any]]]] = (),
    updates: Iterable[Any] = (),
) -> tuple[bool, bool]:
    """On PostgreSQL, `move` (a conditional UPDATE that settles `call`, its values bound) in the run's turn
    (its row lock, taken first) with what goes with it (see `moved_with`), and in the same statement the claim
    of `run` for `owner` when the run is parked and every other call of its step was settled before the
    statement began: whether the move won, and whether the run was claimed (`run` then says so).

    A claim made here is sound: settled calls stay settled, and only one claim moves the run out of
    `suspended`. One not made here may still be due, since the statement's snapshot was taken before it
    waited for the lock (a sibling's result or the worker's park committed meanwhile is not in it): the
    caller then claims in a statement of its own (`claim_after_turn`). A run whose step has one call, parked,
    is settled and claimed in one round trip and one commit."""
    assert not dialect.is_sqlite, "SQLite settles and claims in one transaction"
    rows = [(table, batch) for table, batch in rows if batch]
    moved, won, parts = _moved_and_parts(dialect, move, rows, list(updates), in_turn_of=run.id)
    claim = _claim_of(owner, now)
    claiming = updated(
        dialect, CLAIM_WITH_SETTLE, {"updated_at": now, **claim},
        b_run=run.id, b_step=run.step, b_settled=call.id,
    )  # fmt: skip
    claimed = claiming.where(won).returning(literal_column("1")).cte("claimed")
    statement = select(
        select(func.count()).select_from(moved).scalar_subquery(),
        select(func.count()).select_from(claimed).scalar_subquery(),
    ).add_cte(*parts, claimed)
    moves, claims = (await connection.execute(statement)).one()
    if moves == 1 and claims == 1:
        for key, value in claim.items():
            setattr(run, key, value)
    return moves == 1, moves == 1 and claims == 1


def _inserted_if(dialect: Dialect, moved: Any, table: Any, rows: list[dict[str, Any]]) -> Any:
    """INSERT `rows` into `table` by a SELECT from `moved`: one row each if it wrote its row, none if not."""
    bound = [dialect.row(table, row) for row in rows]
    names = list(bound[0])
    selects = [select(*(values[name].label(name) for name in names)).select_from(moved) for values in bound]
    return insert(table).from_select(names, selects[0] if len(selects) == 1 else union_all(*selects))
