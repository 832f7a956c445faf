"""What the runtime and the sweeps read of runs and tool calls: one run or call, a step's calls, the stale
runs recovery takes over, the approvals the expiry and escalation sweeps act on, the waiting runs a
surface lists (the part of `RunStore` that only reads)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import and_, case, exists, func, or_, select

from ._policies import ToolPolicy
from ._reconnect import retried_while_away
from ._run_sql import (
    CALL,
    CALLS,
    LATEST_WAITING,
    NOT_ESCALATED,
    RUN,
    RUN_CALL_AND_POLICY,
    RUN_MESSAGES,
    RUNS,
    WAITING_IN_THREAD,
    StorePart,
    message_of,
    one_of,
    row_json,
    run_call_and_policy_of,
)
from .defaults import SUSPENDED_RUNS_COUNTED_AHEAD
from .records import StoredRun, StoredToolCall
from .states import IN_PROGRESS_STATES, UNFINISHED_RUN_STATUSES, WAITING_STATES, RunStatus, ToolCallState
from .tables import MessageRow, RunRow, ToolCallRow


@retried_while_away
class RunQueries(StorePart):
    """The part of `RunStore` that reads runs and tool calls."""

    async def get_run(self, run_id: str) -> StoredRun | None:
        async with self._storage.read() as connection:
            row = (await connection.execute(RUN, {"b_run": run_id})).first()
        return StoredRun(**row._mapping) if row is not None else None

    async def run_and_call(
        self, run_id: str, tool_call_id: str | None
    ) -> tuple[StoredRun | None, StoredToolCall | None]:
        """A run and one of its calls (with no `tool_call_id`, the call that waits latest), read together."""
        run, call, _policy = await self.run_call_and_policy(run_id, tool_call_id)
        return run, call

    async def run_call_and_policy(
        self, run_id: str, tool_call_id: str | None
    ) -> tuple[StoredRun | None, StoredToolCall | None, ToolPolicy | None]:
        """A run, one of its calls (with no `tool_call_id`, the call that waits latest) and the policy of the
        tool a human decides about (`displayed_tool_name`; the defaults when none is stored): one statement,
        what a decision or a view of a waiting call reads."""
        statement = RUN_CALL_AND_POLICY[tool_call_id is None]
        async with self._storage.read() as connection:
            row = (await connection.execute(statement, {"b_run": run_id, "b_call": tool_call_id})).first()
        if row is None:
            return None, None, None
        return run_call_and_policy_of(row._mapping)

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

    async def stale_runs(self, agent_id: str, *, stale_before: datetime, limit: int = 100) -> list[str]:
        """Top-level runs of one agent whose lease is older than `stale_before` and that have work in progress.

        Work in progress: the run is `running` (a model call, or calls between steps); or a call of
        its current step is pending, decided but not started, or started; or it is `suspended` while
        no call of its current step waits for anyone (it stopped before it went on); or a call of its
        current step is a live suspension (`held_by`), guarded by the lease of the process that holds it.
        """
        statement = (
            select(RunRow.id)
            .where(
                *_at_work(agent_id),
                or_(RunRow.heartbeat_at.is_(None), RunRow.heartbeat_at < stale_before),
            )
            .order_by(RunRow.heartbeat_at)
            .limit(limit)
        )
        async with self._storage.read_session() as session:
            return list(await session.scalars(statement))

    async def oldest_lease_at_work(self, agent_id: str) -> datetime | None:
        """The oldest lease (`heartbeat_at`) of the runs `stale_runs` would take over once stale: when the
        first of them can go stale (None: no run at work; a run with no lease counts as leased long ago)."""
        statement = select(func.count(), func.min(func.coalesce(RunRow.heartbeat_at, _LONG_AGO))).where(
            *_at_work(agent_id)
        )
        async with self._storage.read() as connection:
            count, oldest = (await connection.execute(statement)).one()
        if not count:
            return None
        return oldest if isinstance(oldest, datetime) else _LONG_AGO

    async def earliest_waits(self, agent_id: str) -> dict[str, tuple[datetime, datetime | None]]:
        """Per tool (as a human sees it), when the top-level call of one agent that waits for approval longest
        began to wait, and the same among those whose current wait was not escalated (None: every one was):
        when the expiry and escalation sweeps have something to do next."""
        tool = func.coalesce(ToolCallRow.shown_tool_name, ToolCallRow.tool_name)
        statement = (
            select(
                tool,
                func.min(ToolCallRow.suspended_at),
                func.min(case((NOT_ESCALATED, ToolCallRow.suspended_at), else_=None)),
            )
            .join(RunRow, RunRow.id == ToolCallRow.run_id)
            .where(
                ToolCallRow.agent_id == agent_id,
                ToolCallRow.state == str(ToolCallState.AWAITING_APPROVAL),
                ToolCallRow.suspended_at.is_not(None),
                RunRow.parent_run_id.is_(None),
            )
            .group_by(tool)
        )
        async with self._storage.read() as connection:
            return {name: (since, unescalated) for name, since, unescalated in await connection.execute(statement)}

    async def run_messages(self, run_id: str) -> list[dict[str, Any]]:
        async with self._storage.read() as connection:
            rows = await connection.execute(RUN_MESSAGES, {"b_run": run_id})
            return [message_of(row) for row in rows]

    async def get_tool_call(self, run_id: str, tool_call_id: str) -> StoredToolCall | None:
        async with self._storage.read() as connection:
            row = (await connection.execute(CALL, {"b_run": run_id, "b_call": tool_call_id})).first()
        return StoredToolCall(**row._mapping) if row is not None else None

    async def latest_waiting_call(self, run_id: str) -> StoredToolCall | None:
        async with self._storage.read() as connection:
            row = (await connection.execute(LATEST_WAITING, {"b_run": run_id})).first()
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

    async def approvals_waiting_since(
        self, agent_id: str, tool_name: str, *, before: datetime, limit: int = 100
    ) -> list[tuple[str, str]]:
        """(run id, tool call id) of the top-level calls of one agent that wait for approval of `tool_name`
        (as a human sees it) since before `before`: what the expiry sweep declines."""
        rows = await self._waiting_since(
            agent_id, tool_name, ToolCallState.AWAITING_APPROVAL, before=before, limit=limit
        )
        return [(row.run_id, row.tool_call_id) for row in rows]

    async def questions_waiting_since(
        self, agent_id: str, tool_name: str, *, before: datetime, limit: int = 100
    ) -> list[tuple[str, str]]:
        """(run id, tool call id) of the top-level calls of one agent whose tool `tool_name` asked a question
        (`suspend()`) still unanswered since before `before`: what the expiry sweep expires. A live question (an
        MCP server's, held open by its process) is left to that process, which cancels it at its own expiry."""
        rows = await self._waiting_since(
            agent_id, tool_name, ToolCallState.SUSPENDED, ToolCallRow.held_by.is_(None), before=before, limit=limit
        )
        return [(row.run_id, row.tool_call_id) for row in rows]

    async def approvals_to_escalate(
        self, agent_id: str, tool_name: str, *, before: datetime, limit: int = 100
    ) -> list[tuple[str, str, datetime]]:
        """(run id, tool call id, waiting since) of the top-level calls of one agent that wait for approval
        of `tool_name` since before `before` and whose current wait was not escalated: what the
        escalation sweep brings to its policy's `escalate_to`."""
        rows = await self._waiting_since(
            agent_id, tool_name, ToolCallState.AWAITING_APPROVAL, NOT_ESCALATED, before=before, limit=limit
        )
        return [(row.run_id, row.tool_call_id, row.suspended_at) for row in rows]

    async def _waiting_since(
        self, agent_id: str, tool_name: str, state: ToolCallState, *more: Any, before: datetime, limit: int
    ) -> list[Any]:
        """The top-level calls of one agent's `tool_name` (as a human sees it) in `state` since before `before`
        (and meeting `more`), oldest first: what the expiry and escalation sweeps look at."""
        statement = (
            select(ToolCallRow.run_id, ToolCallRow.tool_call_id, ToolCallRow.suspended_at)
            .join(RunRow, RunRow.id == ToolCallRow.run_id)
            .where(
                ToolCallRow.agent_id == agent_id,
                ToolCallRow.state == str(state),
                func.coalesce(ToolCallRow.shown_tool_name, ToolCallRow.tool_name) == tool_name,
                ToolCallRow.suspended_at < before,
                RunRow.parent_run_id.is_(None),
                *more,
            )
            .order_by(ToolCallRow.suspended_at)
            .limit(limit)
        )
        async with self._storage.read_session() as session:
            return list(await session.execute(statement))

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
        waiting = exists().where(ToolCallRow.run_id == RunRow.id, one_of(ToolCallRow.state, WAITING_STATES))
        conditions = [
            RunRow.agent_id == agent_id,
            one_of(RunRow.status, UNFINISHED_RUN_STATUSES),
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
                    .where(CALLS.c.run_id.in_(list(calls)), one_of(CALLS.c.state, WAITING_STATES))
                    .order_by(CALLS.c.step, CALLS.c.position)
                )
                for row in rows:
                    calls[row.run_id].append(StoredToolCall(**row._mapping))
            total = total or 0
            return [(run, calls[run.id]) for run in runs], total, total <= counted_up_to

    async def waiting_calls_in_thread(self, thread_id: str) -> list[StoredToolCall]:
        """Every call of the thread still waiting, approvals included, oldest first: one indexed query."""
        async with self._storage.read() as connection:
            rows = await connection.execute(WAITING_IN_THREAD, {"b_thread": thread_id})
            return [StoredToolCall(**row._mapping) for row in rows]

    async def stored_bytes(self, run_id: str) -> int:
        """Bytes stored for one run: its row, its messages and its tool calls, as JSON."""
        async with self._storage.read_session() as session:
            rows: list[Any] = [await session.get(RunRow, run_id)]
            rows += list(await session.scalars(select(MessageRow).where(MessageRow.run_id == run_id)))
            rows += list(await session.scalars(select(ToolCallRow).where(ToolCallRow.run_id == run_id)))
        return sum(len(row_json(row)) for row in rows if row is not None)


_LONG_AGO = datetime(2000, 1, 1, tzinfo=UTC)


def _at_work(agent_id: str) -> tuple[Any, ...]:
    """The conditions of a top-level run of `agent_id` with work in progress (see `RunQueries.stale_runs`)."""
    current_step = and_(ToolCallRow.run_id == RunRow.id, ToolCallRow.step == RunRow.step)
    in_progress = exists().where(
        current_step,
        or_(one_of(ToolCallRow.state, IN_PROGRESS_STATES), ToolCallRow.held_by.is_not(None)),
    )
    waiting = exists().where(current_step, one_of(ToolCallRow.state, WAITING_STATES))
    return (
        RunRow.agent_id == agent_id,
        RunRow.parent_run_id.is_(None),
        one_of(RunRow.status, UNFINISHED_RUN_STATUSES),
        or_(RunRow.status == str(RunStatus.RUNNING), in_progress, ~waiting),
    )
