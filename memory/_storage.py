"""The database handle: one async engine, one session factory, migrations applied on first use.

Several `Storage` objects on one URL (a benchmark, a test, a process that builds one per request) pay
the setup once: the schema check is done once per process per database and package, and in one event
loop they share one engine (its connection pool and its cache of compiled statements), which is
disposed when the last of them closes.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import shutil
import tempfile
import weakref
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine
from sqlalchemy.pool import QueuePool
from sqlalchemy.util import greenlet_spawn

from ._reconnect import away_error, connected, database_away, never_sent
from .clock import SYSTEM_CLOCK, Clock
from .defaults import DEFAULT_DATABASE_URL
from .dialects import Dialect
from .exceptions import DatabaseAwayError
from .migrations import SCHEMA as RUNTIME
from .schema import Schema

_UP_TO_DATE: set[tuple[str, str]] = set()
"""(database, package) pairs this process has brought up to date: the check is not repeated."""


class Storage:
    """Where runs, tool calls, conversation history and decisions live.

    `sqlite+aiosqlite` by default, `postgresql+asyncpg` in production. Several processes may share one
    database: every decision another actor could race is a conditional UPDATE (see `memory.states`).
    """

    def __init__(
        self,
        url: str = DEFAULT_DATABASE_URL,
        *,
        echo: bool = False,
        pool_size: int | None = None,
        max_overflow: int | None = None,
        clock: Clock = SYSTEM_CLOCK,
        reconnect_for: float = 10.0,
    ):
        """`pool_size` and `max_overflow` bound the connections this process opens to the database
        (SQLAlchemy's defaults, 5 and 10, when not given); a caller beyond them waits for a free one.
        `clock` is what the runtime and the adapters read "now" from (see `memory.clock`).
        `reconnect_for`: seconds a database that went away (a restart) is waited for, connecting again
        with backoff, before the work that needs it fails with `DatabaseAwayError` (`memory._reconnect`)."""
        self.url = url
        self.clock = clock
        self.reconnect_for = reconnect_for
        parsed = make_url(url)
        self.dialect = Dialect(parsed.get_backend_name())
        """What differs between SQLite and PostgreSQL (`memory.dialects`)."""
        self.is_sqlite = self.dialect.is_sqlite
        if self.is_sqlite and parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        # An in-memory SQLite database lives and dies with its engine: it is its own database.
        in_memory = self.is_sqlite and parsed.database in (None, "", ":memory:")
        self._database_key = f"{url}#{id(self)}" if in_memory else url
        pool = {} if in_memory else _pool_options(pool_size, max_overflow)
        self._shared = None if in_memory else _shared_engine(url, echo=echo, dialect=self.dialect, pool=pool)
        self.engine: AsyncEngine = (
            self._shared.engine if self._shared else _new_engine(url, echo=echo, dialect=self.dialect, pool=pool)
        )
        self._closed = False
        handles = self._shared.handles if self._shared else _Handles.of(self.engine, self.dialect)
        self.sessionmaker = handles.sessionmaker
        # Reads outside a write transaction (`Dialect.read_options`): no write lock, no BEGIN ... COMMIT.
        self._read_engine = handles.read_engine
        self._reader = handles.reader
        self._migrated = False
        self._migrate_lock = asyncio.Lock()
        from ._audit import AuditLog
        from ._delegations import DelegationStore
        from ._grants import GrantStore
        from ._notices import WorkNotices
        from ._policies import PolicyStore
        from ._runs import RunStore
        from ._undo import UndoStore

        self.notices = WorkNotices(self)
        """Work any replica created, heard on PostgreSQL (`memory._notices`): the sweeps sleep until it comes."""
        self.audit_log = AuditLog(self)
        self.runs = RunStore(self)
        self.policies = PolicyStore(self)
        self.grants = GrantStore(self)
        self.delegations = DelegationStore(self)
        self.undos = UndoStore(self)

    @classmethod
    def temporary(cls) -> Storage:
        """A SQLite database in a new temporary directory that is removed when the process exits: where an
        agent given no storage keeps its runs (they live as long as the process)."""
        directory = tempfile.mkdtemp(prefix="agent-runs-")
        atexit.register(shutil.rmtree, directory, ignore_errors=True)
        return cls(f"sqlite+aiosqlite:///{directory}/runs.db")

    def __repr__(self) -> str:
        return f"Storage({self.engine.url.render_as_string(hide_password=True)!r})"

    async def migrate(self, *schemas: Schema) -> None:
        """Bring the runtime's tables, then those of `schemas` (other packages'), up to date.

        Safe to call from several replicas at once: the upgrade runs in one transaction that holds a
        PostgreSQL advisory lock (on SQLite, the write lock of BEGIN IMMEDIATE), so one replica
        migrates and the others then find nothing to do. Each (database, package) is checked once per
        process, so calling this again, or on a new `Storage` of the same URL, costs nothing; a database
        whose version tables already name every head is not handed to Alembic at all (one read each).
        """
        wanted = [schema for schema in (RUNTIME, *schemas) if (self._database_key, schema.name) not in _UP_TO_DATE]
        if not wanted:
            self._migrated = True
            return
        async with self._migrate_lock:
            wanted = [schema for schema in wanted if (self._database_key, schema.name) not in _UP_TO_DATE]
            if wanted:
                async with self._read_engine.connect() as connection:
                    await self.dialect.before_migration(connection)
                    wanted = [schema for schema in wanted if await _stored_version(connection, schema) != schema.head()]
            if wanted:
                async with self.engine.begin() as connection:
                    await self.dialect.lock_for_migration(connection)
                    for schema in wanted:
                        await connection.run_sync(schema.upgrade)
            _UP_TO_DATE.update((self._database_key, schema.name) for schema in (RUNTIME, *schemas))
            self._migrated = True

    @asynccontextmanager
    async def session(self) -> AsyncIterator[AsyncSession]:
        """A session inside one transaction, committed on success."""
        if not self._migrated:
            await self.migrate()
        session = await self._opened(self.sessionmaker)
        committing = False
        try:
            yield session
            committing = True
        except Exception as exc:
            _raise_if_away(exc)
            raise
        finally:
            await _ended_quietly(session, commit=committing)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncConnection]:
        """One write transaction on a plain connection (SQL statements, no ORM unit of work), committed on
        success: the runtime's hot path, where every state transition is one of these."""
        if not self._migrated:
            await self.migrate()
        connection = await connected(self.engine.connect, reconnect_for=self.reconnect_for)
        committing = False
        try:
            await connection.begin()
            yield connection
            committing = True
        except Exception as exc:
            _raise_if_away(exc)
            raise
        finally:
            await _ended_quietly(connection, commit=committing)

    @asynccontextmanager
    async def statement(self, *, idempotent: bool = False) -> AsyncIterator[AsyncConnection]:
        """A connection for one write statement that commits by itself (several, merged by
        `Dialect.together`, count as one): on PostgreSQL in autocommit, one round trip where
        `transaction()` takes three (BEGIN, the statement, COMMIT); on SQLite a transaction like `transaction()`.

        Only for work that is whole in one statement: a second statement here commits apart from the first.
        A connection that drops while the statement runs leaves its outcome unknown
        (`CommitOutcomeUnknownError`), unless the caller says it is `idempotent` (an INSERT ... ON CONFLICT
        DO NOTHING, an UPDATE to a value) or the statement never left (a pooled connection the server had
        closed): then it is `DatabaseAwayError`, which `retried_while_away` retries.
        """
        if self.is_sqlite:
            async with self.transaction() as connection:
                yield connection
            return
        async with self._autocommitted(writes=not idempotent) as connection:
            yield connection

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncConnection]:
        """A plain connection for reads alone, outside any write transaction (see `read_session`)."""
        async with self._autocommitted(writes=False) as connection:
            yield connection

    @asynccontextmanager
    async def _autocommitted(self, *, writes: bool) -> AsyncIterator[AsyncConnection]:
        """A connection of the read engine (autocommit on PostgreSQL, no write lock on SQLite) for `read` and
        `statement`. A connection lost on the way is the database being away; `writes`: and, unless the
        statement never left, of an outcome unknown (it may have committed)."""
        if not self._migrated:
            await self.migrate()
        connection = await connected(self._read_engine.connect, reconnect_for=self.reconnect_for)
        try:
            yield connection
        except Exception as exc:
            if database_away(exc) and not isinstance(exc, DatabaseAwayError):
                raise away_error(exc, committing=writes and not never_sent(exc)) from exc
            raise
        finally:
            await _ended_quietly(connection, commit=False)

    @asynccontextmanager
    async def read_session(self) -> AsyncIterator[AsyncSession]:
        """A session for reads alone, outside any write transaction (see `__init__`); never write through it.

        What is read and then written in one decision belongs in `session()`: a read here may be stale by
        the time its caller acts, which is fine for what the caller then checks with a conditional UPDATE.
        """
        if not self._migrated:
            await self.migrate()
        session = await self._opened(self._reader)
        try:
            yield session
        except Exception as exc:
            _raise_if_away(exc)
            raise
        finally:
            await _ended_quietly(session, commit=False)

    async def _opened(self, sessions: async_sessionmaker[AsyncSession]) -> AsyncSession:
        """A new session with its connection (and transaction) begun, connecting again while the database is away."""

        async def attempt() -> AsyncSession:
            session = sessions()
            try:
                await session.connection()
            except BaseException:
                await _ended_quietly(session, commit=False)
                raise
            return session

        return await connected(attempt, reconnect_for=self.reconnect_for)

    async def notify(self, channel: str, payload: str = "") -> None:
        """Tell the processes that `listen` on `channel` (PostgreSQL `NOTIFY`); nothing on SQLite, whose
        listeners poll."""
        if self.is_sqlite:
            return
        async with self.transaction() as connection:
            await connection.execute(
                text("SELECT pg_notify(:channel, :payload)"), {"channel": channel, "payload": payload}
            )

    @asynccontextmanager
    async def listen(self, channel: str, heard: Callable[[str], None]) -> AsyncIterator[bool]:
        """Call `heard(payload)` for each `NOTIFY` on `channel` while inside (PostgreSQL: `LISTEN` on a
        connection of its own); yields False on SQLite, where nothing is heard and the caller polls."""
        if self.is_sqlite:
            yield False
            return
        if not self._migrated:
            await self.migrate()
        async with self.engine.connect() as connection:
            raw = (await connection.get_raw_connection()).driver_connection
            assert raw is not None, "an open connection has its driver's connection"

            def on_notify(_connection: Any, _pid: int, _channel: str, payload: str) -> None:
                heard(payload)

            await raw.add_listener(channel, on_notify)
            try:
                yield True
            finally:
                with contextlib.suppress(Exception):
                    await raw.remove_listener(channel, on_notify)

    async def close(self) -> None:
        """Close the database connections, unless another open `Storage` of this loop shares them."""
        if self._closed:
            return
        self._closed = True
        await self.notices.close()
        if self._shared is not None:
            self._shared.users -= 1
            if self._shared.users > 0:
                return
        pool = self.engine.sync_engine.pool
        if isinstance(pool, QueuePool) and pool.checkedout() == 0:
            # every connection is back in the pool: closing them leaves it as a new one, which a later Storage
            # uses (`Engine.dispose` would build another pool, its events copied: about 0.1 ms)
            await greenlet_spawn(pool.dispose)
            return
        await self.engine.dispose()  # the engine stays usable: a later Storage opens new connections


async def _ended_quietly(held: AsyncSession | AsyncConnection, *, commit: bool) -> None:
    """End a session's or connection's work (commit it, or roll back what is uncommitted) and give its
    connection back to the pool, even when the task is cancelled meanwhile; then go on being cancelled.

    A turn is cancelled (a shutdown, a burst's client gone) while it holds a session; the end of its work
    then awaits the rollback and the pool's return, and the pool closes a connection beyond `pool_size`
    with an awaited driver close. A cancellation landing in there (the task cancelled again, or a timeout
    around it) interrupted that close: SQLAlchemy logged `Exception closing connection ...
    CancelledError` with its traceback and left the connection half closed. Here the end runs in a task
    of its own that a cancellation does not reach; the caller waits for it and is cancelled after. A
    commit that fails still raises (after the connection is given back).
    """

    async def end() -> None:
        try:
            if commit:
                await held.commit()
        except Exception as exc:
            if database_away(exc):
                raise away_error(exc, committing=True) from exc
            raise
        finally:
            try:
                await held.close()
            except Exception as exc:
                if not database_away(exc):  # closing a connection the server dropped: nothing is lost
                    raise

    ending = asyncio.ensure_future(end())
    cancelled = False
    while not ending.done():
        try:
            await asyncio.shield(ending)
        except asyncio.CancelledError:
            # the end is shielded, so this is the caller's cancellation, also when the end finished in
            # the same moment: it is passed on once the end is done, never swallowed (a sweep that lost
            # its cancellation kept `dev` from ever stopping on Ctrl-C)
            cancelled = True
    if cancelled or ending.cancelled():
        raise asyncio.CancelledError
    ending.result()


def _raise_if_away(exc: Exception) -> None:
    """Raise `exc` as the runtime's `DatabaseAwayError` when it says the database went away before the
    commit (nothing was stored: the work may be done again); return for any other error."""
    if database_away(exc) and not isinstance(exc, DatabaseAwayError):
        raise away_error(exc, committing=False) from exc


@dataclass(frozen=True)
class _Handles:
    """What a `Storage` opens its sessions and connections with, made once per engine."""

    sessionmaker: async_sessionmaker[AsyncSession]
    read_engine: AsyncEngine
    reader: async_sessionmaker[AsyncSession]

    @classmethod
    def of(cls, engine: AsyncEngine, dialect: Dialect) -> _Handles:
        read_engine = engine.execution_options(**dialect.read_options)
        return cls(
            sessionmaker=async_sessionmaker(engine, expire_on_commit=False),
            read_engine=read_engine,
            reader=async_sessionmaker(read_engine, expire_on_commit=False),
        )


@dataclass
class _SharedEngine:
    engine: AsyncEngine
    handles: _Handles
    users: int = 0
    """Open `Storage` objects on it; the last to close disposes its connections."""


_ENGINES: weakref.WeakKeyDictionary[
    asyncio.AbstractEventLoop, dict[tuple[str, bool, tuple[tuple[str, int], ...]], _SharedEngine]
] = weakref.WeakKeyDictionary()
"""Per event loop (connections belong to the loop that opened them): (URL, echo, pool) -> its engine."""


async def _stored_version(connection: AsyncConnection, schema: Schema) -> str | None:
    """The revision `schema`'s version table records; None if it has none, or no such table yet."""
    try:
        version = await connection.scalar(text(f'SELECT version_num FROM "{schema.version_table}"'))
    except DBAPIError:  # no such table: a new database, or a package it never had
        return None
    return None if version is None else str(version)


def _pool_options(pool_size: int | None, max_overflow: int | None) -> dict[str, int]:
    options = {"pool_size": pool_size, "max_overflow": max_overflow}
    for name, value in options.items():
        if value is not None and value < (1 if name == "pool_size" else 0):
            raise ValueError(f"Storage: {name} must be at least {1 if name == 'pool_size' else 0}, not {value}")
    return {name: value for name, value in options.items() if value is not None}


def _shared_engine(url: str, *, echo: bool, dialect: Dialect, pool: dict[str, int]) -> _SharedEngine | None:
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None  # built outside a loop: an engine of its own
    key = (url, echo, tuple(sorted(pool.items())))
    shared = _ENGINES.setdefault(loop, {}).get(key)
    if shared is None:
        engine = _new_engine(url, echo=echo, dialect=dialect, pool=pool)
        shared = _ENGINES[loop][key] = _SharedEngine(engine, _Handles.of(engine, dialect))
    shared.users += 1
    return shared


def _new_engine(url: str, *, echo: bool, dialect: Dialect, pool: dict[str, int] | None = None) -> AsyncEngine:
    # set when the connection opens, not by a statement each
    engine = create_async_engine(url, echo=echo, **dialect.engine_options, **(pool or {}))
    dialect.configure(engine)
    return engine
