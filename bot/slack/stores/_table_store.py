"""What every store of the adapter's tables shares: its storage, a write transaction, a read session and
the dialect's INSERT (for ON CONFLICT DO NOTHING, `memory.dialects`).

The stores do not migrate: the adapter's tables are brought up to date once, when the bot starts
(`prepare_slack_tables`), not checked on every call.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from memory import Storage


class TableStore:
    def __init__(self, storage: Storage):
        self.storage = storage

    @asynccontextmanager
    async def _writing(self, session: AsyncSession | None = None) -> AsyncIterator[AsyncSession]:
        """One transaction, committed on success; given `session`, a part of that caller's transaction
        (`SlackStores` makes one transaction of a turn's writes to two tables)."""
        if session is not None:
            yield session
            return
        async with self.storage.session() as own:
            yield own

    @asynccontextmanager
    async def _reading(self) -> AsyncIterator[AsyncSession]:
        """A session for reads alone, outside a write transaction (`Storage.read_session`): no write lock on
        SQLite, no BEGIN/COMMIT on PostgreSQL. What is read and then written in one decision stays in
        `_writing`."""
        async with self.storage.read_session() as session:
            yield session

    def _insert(self, table: Any):
        return self.storage.dialect.insert(table)
