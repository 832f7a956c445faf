"""What every store of the adapter's tables shares: its storage, a write transaction, a read connection and
the dialect's INSERT (for ON CONFLICT DO NOTHING, `memory.dialects`).

A store runs SQL statements on plain connections (`Storage.transaction`, `Storage.read`): no ORM unit of
work (measured on SQLite, a one-statement write transaction through a session cost 1.3x one on a
connection, a read 1.6x). A store whose methods hand out mapped
rows (`ToolCallMessageRow`) loads them through ORM sessions instead (`_reading_rows`). A write that is whole
in one statement commits by itself (`_one_statement`: one round trip on PostgreSQL).

The stores do not migrate: the adapter's tables are brought up to date once, when the bot starts
(`prepare_slack_tables`), not checked on every call.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, cast

from sqlalchemy import CursorResult, Result
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from memory import Storage


def rows_changed(result: Result[Any]) -> int:
    """How many rows an INSERT, UPDATE or DELETE changed (its result is a cursor's, whatever the stubs say)."""
    return cast(CursorResult[Any], result).rowcount


class TableStore:
    def __init__(self, storage: Storage):
        self.storage = storage

    @asynccontextmanager
    async def _writing(self, connection: AsyncConnection | None = None) -> AsyncIterator[AsyncConnection]:
        """One transaction, committed on success; given `connection`, a part of that caller's transaction
        (`SlackStores` makes one transaction of a turn's writes to two tables)."""
        if connection is not None:
            yield connection
            return
        async with self.storage.transaction() as own:
            yield own

    @asynccontextmanager
    async def _one_statement(self, *, idempotent: bool = False) -> AsyncIterator[AsyncConnection]:
        """A write that is whole in one statement, committed by itself (`Storage.statement`: one round trip on
        PostgreSQL, where `_writing` takes three). `idempotent`: running it twice is the same as once, so a
        connection lost while it ran is tried again (`retried_while_away`) rather than an unknown outcome."""
        async with self.storage.statement(idempotent=idempotent) as connection:
            yield connection

    @asynccontextmanager
    async def _reading(self) -> AsyncIterator[AsyncConnection]:
        """A connection for reads alone, outside a write transaction (`Storage.read`): no write lock on
        SQLite, no BEGIN/COMMIT on PostgreSQL. What is read and then written in one decision stays in
        `_writing`."""
        async with self.storage.read() as connection:
            yield connection

    @asynccontextmanager
    async def _reading_rows(self) -> AsyncIterator[AsyncSession]:
        """`_reading` for statements that load mapped rows (`Storage.read_session`)."""
        async with self.storage.read_session() as session:
            yield session

    def _insert(self, table: Any):
        return self.storage.dialect.insert(table)
