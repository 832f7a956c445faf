"""Reading and writing runs, their messages and their tool calls.

Every change of a tool call's state goes through `transition`, a conditional UPDATE: the row moves
only if it is still in a state it may leave, and the caller learns whether it won.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import and_, func, select, update

from .exceptions import ThreadOwnerError
from .states import WAITING_STATES, RunStatus, ToolCallState, sources_of
from .tables import MessageRow, RunRow, ThreadRow, ToolCallRow, utcnow

if TYPE_CHECKING:
    from ._storage import Storage


class RunStore:
    def __init__(self, storage: Storage):
        self._storage = storage

    # --- runs -------------------------------------------------------------------------------
    async def create_run(self, run: RunRow, messages: Iterable[dict[str, Any]] = ()) -> None:
        async with self._storage.session() as session:
            session.add(run)
            await session.flush()
            _add_messages(session, run, messages)

    async def get_run(self, run_id: str) -> RunRow | None:
        async with self._storage.session() as session:
            return await session.get(RunRow, run_id)

    async def set_run(self, run_id: str, *, only_if: Iterable[str] | None = None, **fields: Any) -> bool:
        """Update a run; with `only_if`, only while its status is one of those (the caller learns if it won)."""
        fields.setdefault("updated_at", utcnow())
        statement = update(RunRow).where(RunRow.id == run_id)
        if only_if is not None:
            statement = statement.where(RunRow.status.in_([str(s) for s in only_if]))
        async with self._storage.session() as session:
            result = await session.execute(statement.values(**fields))
            return result.rowcount == 1

    async def claim_run(self, run_id: str, owner: str) -> bool:
        """Take a suspended run to work on it; exactly one claimant wins."""
        now = utcnow()
        return await self.set_run(
            run_id, only_if=[RunStatus.SUSPENDED], status=RunStatus.RUNNING, owner=owner, heartbeat_at=now
        )

    # --- messages ---------------------------------------------------------------------------
    async def add_messages(self, run: RunRow, messages: Iterable[dict[str, Any]]) -> None:
        async with self._storage.session() as session:
            _add_messages(session, run, messages)

    async def run_messages(self, run_id: str) -> list[dict[str, Any]]:
        async with self._storage.session() as session:
            rows = await session.scalars(select(MessageRow).where(MessageRow.run_id == run_id).order_by(MessageRow.id))
            return [message_of(row) for row in rows]

    async def ensure_thread(self, thread_id: str, resource_id: str | None) -> None:
        """Create the thread for its first resource; refuse any other resource afterwards."""
        async with self._storage.session() as session:
            thread = await session.get(ThreadRow, thread_id)
            if thread is None:
                session.add(ThreadRow(id=thread_id, resource_id=resource_id or ""))
            elif resource_id is not None and not thread.resource_id:
                thread.resource_id = resource_id  # a thread started without an owner takes its first one
            elif resource_id is not None and thread.resource_id != resource_id:
                raise ThreadOwnerError(
                    f"thread {thread_id!r} belongs to resource {thread.resource_id!r}, not {resource_id!r}; "
                    "use the owner's resource_id or another thread"
                )

    # --- tool calls -------------------------------------------------------------------------
    async def add_tool_calls(self, calls: list[ToolCallRow]) -> None:
        async with self._storage.session() as session:
            session.add_all(calls)

    async def get_tool_call(self, run_id: str, tool_call_id: str) -> ToolCallRow | None:
        async with self._storage.session() as session:
            return await session.scalar(
                select(ToolCallRow).where(ToolCallRow.run_id == run_id, ToolCallRow.tool_call_id == tool_call_id)
            )

    async def latest_waiting_call(self, run_id: str) -> ToolCallRow | None:
        async with self._storage.session() as session:
            return await session.scalar(
                select(ToolCallRow)
                .where(ToolCallRow.run_id == run_id, ToolCallRow.state.in_([str(s) for s in WAITING_STATES]))
                .order_by(ToolCallRow.suspended_at.desc(), ToolCallRow.id.desc())
                .limit(1)
            )

    async def call_ids(self, run_id: str) -> set[str]:
        async with self._storage.session() as session:
            return set(await session.scalars(select(ToolCallRow.tool_call_id).where(ToolCallRow.run_id == run_id)))

    async def step_calls(self, run_id: str, step: int) -> list[ToolCallRow]:
        async with self._storage.session() as session:
            rows = await session.scalars(
                select(ToolCallRow)
                .where(ToolCallRow.run_id == run_id, ToolCallRow.step == step)
                .order_by(ToolCallRow.position)
            )
            return list(rows)

    async def transition(
        self,
        call: ToolCallRow,
        to: ToolCallState,
        *,
        allowed_from: Iterable[ToolCallState] | None = None,
        **fields: Any,
    ) -> bool:
        """Move `call` to `to` if it is still in a state that may go there; True if this caller won.

        On success the in-memory `call` is updated too, so the caller goes on with what was stored.
        """
        sources = sources_of(to, frozenset(allowed_from) if allowed_from is not None else None)
        now = utcnow()
        values = {"state": str(to), "updated_at": now, **fields}
        if to in WAITING_STATES and "suspended_at" not in fields:
            values["suspended_at"] = now
        async with self._storage.session() as session:
            result = await session.execute(
                update(ToolCallRow).where(ToolCallRow.id == call.id, ToolCallRow.state.in_(sources)).values(**values)
            )
            won = result.rowcount == 1
        if won:
            for key, value in values.items():
                setattr(call, key, value)
        return won

    async def audit(
        self,
        call: ToolCallRow,
        action: str,
        actor: str | None,
        detail: str | None = None,
        *,
        via: str = "runtime",
        policy_version: int | None = None,
    ) -> None:
        """Add what happened to `call` to the audit trail (see `memory._audit`)."""
        await self._storage.audit_log.record(
            run_id=call.run_id,
            tool_call_id=call.tool_call_id,
            tool_name=call.displayed_tool_name,
            action=action,
            actor=actor,
            via=via,
            args_fingerprint=call.fingerprint,
            policy_version=policy_version,
            detail=detail,
        )

    # --- discovery --------------------------------------------------------------------------
    async def suspended_runs(
        self,
        agent_id: str,
        *,
        thread_id: str | None,
        resource_id: str | None,
        page: int,
        per_page: int,
    ) -> tuple[list[tuple[RunRow, list[ToolCallRow]]], int]:
        """Top-level suspended runs of one agent, newest first, each with its waiting calls."""
        conditions = [
            RunRow.agent_id == agent_id,
            RunRow.status == str(RunStatus.SUSPENDED),
            RunRow.parent_run_id.is_(None),
        ]
        if thread_id is not None:
            conditions.append(RunRow.thread_id == thread_id)
        if resource_id is not None:
            conditions.append(RunRow.resource_id == resource_id)
        async with self._storage.session() as session:
            total = await session.scalar(select(func.count()).select_from(RunRow).where(and_(*conditions)))
            runs = list(
                await session.scalars(
                    select(RunRow)
                    .where(and_(*conditions))
                    .order_by(RunRow.suspended_at.desc(), RunRow.id)
                    .offset(page * per_page)
                    .limit(per_page)
                )
            )
            calls: dict[str, list[ToolCallRow]] = {run.id: [] for run in runs}
            if runs:
                rows = await session.scalars(
                    select(ToolCallRow)
                    .where(
                        ToolCallRow.run_id.in_(list(calls)),
                        ToolCallRow.state.in_([str(s) for s in WAITING_STATES]),
                    )
                    .order_by(ToolCallRow.step, ToolCallRow.position)
                )
                for row in rows:
                    calls[row.run_id].append(row)
            return [(run, calls[run.id]) for run in runs], total or 0

    async def waiting_calls_in_thread(self, thread_id: str) -> list[ToolCallRow]:
        """Every call of the thread still waiting, approvals included, oldest first: one indexed query."""
        async with self._storage.session() as session:
            rows = await session.scalars(
                select(ToolCallRow)
                .where(ToolCallRow.thread_id == thread_id, ToolCallRow.state.in_([str(s) for s in WAITING_STATES]))
                .order_by(ToolCallRow.suspended_at, ToolCallRow.id)
            )
            return list(rows)

    async def stored_bytes(self, run_id: str) -> int:
        """Bytes stored for one run: its row, its messages and its tool calls, as JSON."""
        async with self._storage.session() as session:
            rows: list[Any] = [await session.get(RunRow, run_id)]
            rows += list(await session.scalars(select(MessageRow).where(MessageRow.run_id == run_id)))
            rows += list(await session.scalars(select(ToolCallRow).where(ToolCallRow.run_id == run_id)))
        return sum(len(_row_json(row)) for row in rows if row is not None)


def _add_messages(session, run: RunRow, messages: Iterable[dict[str, Any]]) -> None:
    thread_id = run.thread_id if run.uses_memory else None
    for message in messages:
        session.add(
            MessageRow(
                run_id=run.id,
                thread_id=thread_id,
                role=message["role"],
                content=message.get("content"),
                tool_calls=message.get("tool_calls"),
                tool_call_id=message.get("tool_call_id"),
            )
        )


def message_of(row: MessageRow) -> dict[str, Any]:
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


__all__ = ["RunStore"]
