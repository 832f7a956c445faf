"""The tests' databases: a migrated one for each test, made without migrating each time.

A test's database holds every package's tables (the runtime's, the Slack adapter's, the demo's and the
playground's) and no rows. Migrating takes about 0.3 s on SQLite and, with making and dropping a
PostgreSQL database, 1-2 s there; the suite has about 600 tests on each. So:

- SQLite: each worker migrates one file once and each test gets a copy of it.
- PostgreSQL: each worker keeps the databases its tests finished with; a finished one is emptied
  (`TRUNCATE ... RESTART IDENTITY`) and given to the next test. One that anyone is still connected to
  when its test ends (a process the test left behind) is dropped instead, so nothing a test leaves running
  reaches the next test. The pool's databases are dropped when the worker ends.

Tests of the migrations themselves want an empty database: `empty_postgres_database()` / `drop_postgres_database()`.
"""

from __future__ import annotations

import asyncio
import shutil
import uuid
from pathlib import Path

POSTGRES_ADMIN = {"host": "127.0.0.1", "port": 5432, "user": "postgres", "database": "postgres"}
POSTGRES_PREFIX = "bot_test_"


def postgres_url(name: str) -> str:
    return f"postgresql+asyncpg://postgres@127.0.0.1:5432/{name}"


async def migrate_every_package(url: str) -> None:
    from bot.demo.migrations import SCHEMA as DEMO
    from bot.playground.migrations import SCHEMA as PLAYGROUND
    from bot.slack.migrations import SCHEMA as SLACK
    from memory import Storage

    storage = Storage(url)
    try:
        await storage.migrate(SLACK, DEMO, PLAYGROUND)
    finally:
        await storage.close()


async def empty_postgres_database() -> str:
    """A new PostgreSQL database with no tables; its name.

    Its commits do not wait for the server to flush them to disk (`synchronous_commit = off`, for every
    connection to it, the bot's processes too): only a crash of the PostgreSQL server itself could lose
    them, and no test crashes the server. What a commit decides (who won a conditional UPDATE) is the same."""
    import asyncpg

    name = f"{POSTGRES_PREFIX}{uuid.uuid4().hex}"
    connection = await asyncpg.connect(**POSTGRES_ADMIN)
    try:
        await connection.execute(f'CREATE DATABASE "{name}"')
        await connection.execute(f'ALTER DATABASE "{name}" SET synchronous_commit = off')
    finally:
        await connection.close()
    return name


async def drop_postgres_database(name: str) -> None:
    import asyncpg

    connection = await asyncpg.connect(**POSTGRES_ADMIN)
    try:
        await connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await connection.close()


class SqliteTemplate:
    """One migrated SQLite file per worker; `copy_to` gives a test its own copy."""

    def __init__(self, directory: Path) -> None:
        self._path = directory / "migrated.db"
        self._ready = False

    async def copy_to(self, path: Path) -> str:
        if not self._ready:
            await migrate_every_package(f"sqlite+aiosqlite:///{self._path}")
            assert not Path(f"{self._path}-wal").exists(), "the template's WAL was not folded into it on close"
            self._ready = True
        shutil.copyfile(self._path, path)
        return f"sqlite+aiosqlite:///{path}"


class PostgresPool:
    """Migrated PostgreSQL databases of one worker, emptied between tests."""

    def __init__(self) -> None:
        self._free: list[str] = []
        self._made: set[str] = set()

    async def take(self) -> str:
        if self._free:
            return self._free.pop()
        name = await empty_postgres_database()
        self._made.add(name)
        await migrate_every_package(postgres_url(name))
        return name

    async def give_back(self, name: str) -> None:
        """Empty `name` for the next test, or drop it if someone is still connected to it."""
        if await self._emptied(name):
            self._free.append(name)
            return
        self._made.discard(name)
        await drop_postgres_database(name)

    async def _emptied(self, name: str) -> bool:
        import asyncpg

        try:
            connection = await asyncpg.connect(**{**POSTGRES_ADMIN, "database": name})
        except (OSError, asyncpg.PostgresError):
            return False
        try:
            others = "SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()"
            for _ in range(20):  # a connection being closed as the test ended goes away within moments
                if await connection.fetchval(others, name) == 0:
                    break
                await asyncio.sleep(0.05)
            else:
                return False  # a process the test started is still there: never hand it to another test
            tables = await connection.fetch(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename NOT LIKE 'alembic_version%'"
            )
            quoted = ", ".join('"' + row["tablename"] + '"' for row in tables)
            await connection.execute("SET lock_timeout = '2s'")
            await connection.execute(f"TRUNCATE {quoted} RESTART IDENTITY CASCADE")
            return True
        except asyncpg.PostgresError:
            return False
        finally:
            await connection.close()

    def drop_all(self) -> None:
        """Drop every database this worker made (at the end of the worker's session)."""
        names, self._made, self._free = list(self._made), set(), []

        async def drop() -> None:
            for name in names:
                await drop_postgres_database(name)

        if names:
            asyncio.run(drop())
