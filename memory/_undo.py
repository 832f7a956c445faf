"""Undo: a call that ran (`done`) may be undone once, within its policy's window, by one person.

`UndoStore.claim` is one conditional UPDATE (the call is `done`, nobody claimed its undo, it finished
within the window), so of two clicks, two replicas or a click after the window exactly one, or none,
wins; the winner runs the tool's undo and `UndoStore.finish` records how it went (`undone` or
`undo_failed`), its audit line and the note the model reads in the thread's history, in one transaction.
An undo that was claimed is never run again, whatever became of it. "Now" is `storage.clock`.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import update

from ._reconnect import retried_while_away
from ._run_sql import add_messages
from .records import StoredRun, StoredToolCall
from .states import ToolCallState
from .tables import AuditRow, ToolCallRow

if TYPE_CHECKING:
    from ._database import Database

UNDOING, UNDONE, UNDO_FAILED = "undoing", "undone", "undo_failed"


@retried_while_away
class UndoStore:
    """Claims and records the undo of calls that ran."""

    def __init__(self, storage: Database):
        self._storage = storage

    async def claim(self, call: StoredToolCall, *, actor: str | None, window: int) -> bool:
        """Take on undoing `call` for `actor`: True if this caller won it (the call is `done`, its undo was
        never claimed, and it finished less than `window` seconds ago)."""
        now = self._storage.clock.now()
        statement = (
            update(ToolCallRow)
            .where(
                ToolCallRow.run_id == call.run_id,
                ToolCallRow.tool_call_id == call.tool_call_id,
                ToolCallRow.state == str(ToolCallState.DONE),
                ToolCallRow.undo_state.is_(None),
                ToolCallRow.updated_at > now - timedelta(seconds=window),
            )
            .values(undo_state=UNDOING, undone_by=actor, undone_at=now)
        )
        async with self._storage.transaction() as connection:
            return (await connection.execute(statement)).rowcount == 1

    async def finish(
        self,
        call: StoredToolCall,
        run: StoredRun,
        *,
        ok: bool,
        actor: str | None,
        via: str,
        detail: str,
        policy_version: int | None,
        note: dict[str, Any] | None,
    ) -> datetime:
        """Record how the claimed undo of `call` went: its state, its audit line (`undone` or `undo_failed`)
        and `note` (the message the model reads in the thread's history), in one transaction."""
        now = self._storage.clock.now()
        state = UNDONE if ok else UNDO_FAILED
        async with self._storage.transaction() as connection:
            await connection.execute(
                update(ToolCallRow)
                .where(ToolCallRow.id == call.id, ToolCallRow.undo_state == UNDOING)
                .values(undo_state=state, undone_at=now)
            )
            await connection.execute(
                AuditRow.__table__.insert().values(
                    run_id=call.run_id,
                    tool_call_id=call.tool_call_id,
                    tool_name=call.displayed_tool_name,
                    action=state,
                    actor=actor or "system",
                    via=via,
                    args_fingerprint=call.fingerprint,
                    policy_version=policy_version,
                    detail=detail[:500],
                    at=now,
                )  # fmt: skip
            )
            if note is not None:
                await add_messages(connection, run, [note])
        return now


__all__ = ["UNDOING", "UNDONE", "UNDO_FAILED", "UndoStore"]
