"""The database handle: one async engine, one session factory, migrations applied on first use.

The schema check is done once per process per database and package: several `Storage` objects on
one URL (a benchmark, a test, a process that builds one per request) pay Alembic's check once.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from sqlalchemy import event, text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine

from .defaults import DEFAULT_DATABASE_URL
from .migrations import SCHEMA as RUNTIME
from .schema import Schema

_MIGRATION_LOCK = 7_300_451  # any constant: the advisory lock replicas take while one of them migrates
_UP_TO_DATE: set[tuple[str, str]] = set()
"""(database, package) pairs this process has brought up to date: the check is not repeated."""


class Storage:
    """Where runs, tool calls, conversation history and decisions live.

    `sqlite+aiosqlite` by default, `postgresql+asyncpg` in production. Several processes may share one
    database: every decision another actor could race is a conditional UPDATE (see `memory.states`).
    """

    def __init__(self, url: str = DEFAULT_DATABASE_URL, *, echo: bool = False):
        self.url = url
        parsed = make_url(url)
        self.is_sqlite = parsed.get_backend_name() == "sqlite"
        if self.is_sqlite and parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        self.engine: AsyncEngine = create_async_engine(url, echo=echo)
        if self.is_sqlite:
            _serialize_sqlite_writers(self.engine)
        self.sessionmaker = async_sessionmaker(self.engine, expire_on_commit=False)
        # An in-memory SQLite database lives and dies with its engine: it is its own database.
        in_memory = self.is_sqlite and parsed.database in (None, "", ":memory:")
        self._database_key = f"{url}#{id(self)}" if in_memory else url
        self._migrated = False
        self._migrate_lock = asyncio.Lock()
        from ._audit import AuditLog
        from ._policies import PolicyStore
        from ._runs import RunStore

        self.audit_log = AuditLog(self)
        self.runs = RunStore(self, self.audit_log)
        self.policies = PolicyStore(self)

    def __repr__(self) -> str:
        return f"Storage({self.engine.url.render_as_string(hide_password=True)!r})"

    async def migrate(self, *schemas: Schema) -> None:
        """Bring the runtime's tables, then those of `schemas` (other packages'), up to date.

        Safe to call from several replicas at once: the upgrade runs in one transaction that holds a
        PostgreSQL advisory lock (on SQLite, the write lock of BEGIN IMMEDIATE), so one replica
        migrates and the others then find nothing to do. Each (database, package) is checked once per
        process, so calling this again, or on a new `Storage` of the same URL, costs nothing.
        """
        wanted = [schema for schema in (RUNTIME, *schemas) if (self._database_key, schema.name) not in _UP_TO_DATE]
        if not wanted:
            self._migrated = True
            return
        async with self._migrate_lock:
            wanted = [schema for schema in wanted if (self._database_key, schema.name) not in _UP_TO_DATE]
            if wanted:
                async with self.engine.begin() as connection:
                    if not self.is_sqlite:
                        await connection.execute(text(f"SELECT pg_advisory_xact_lock({_MIGRATION_LOCK})"))
                    for schema in wanted:
                        await connection.run_sync(schema.upgrade)
                _UP_TO_DATE.update((self._database_key, schema.name) for schema in wanted)
            self._migrated = True

    @asynccontextmanager
    async def session(self) -> AsyncIterator[AsyncSession]:
        """A session inside one transaction, committed on success."""
        if not self._migrated:
            await self.migrate()
        async with self.sessionmaker() as session, session.begin():
            yield session

    async def close(self) -> None:
        await self.engine.dispose()

    # Convenience pass-throughs used by tests and the command line.
    async def get_run(self, run_id: str):
        return await self.runs.get_run(run_id)

    async def stored_bytes(self, run_id: str) -> int:
        return await self.runs.stored_bytes(run_id)


def _serialize_sqlite_writers(engine: AsyncEngine) -> None:
    """Make every SQLite transaction take the write lock up front (BEGIN IMMEDIATE).

    Two processes that both read and then write would otherwise deadlock on the lock upgrade, which
    SQLite answers with an immediate "database is locked" that no busy timeout can wait out.
    """

    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection, _record) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(connection) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE")
