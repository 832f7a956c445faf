"""What differs between SQLite and PostgreSQL, in one place: every store asks its `Dialect` instead of
branching on the database itself.

- an INSERT that can do nothing on conflict (each dialect has its own `insert` construct);
- how concurrent writers are serialised: SQLite lets one writer at a time (every transaction begins
  with BEGIN IMMEDIATE, see `Storage`), so a row lock is unneeded (and unsupported); PostgreSQL locks rows;
- how reads outside a write transaction are made (no write lock on SQLite; autocommit on PostgreSQL);
- how the driver connects and each transaction begins, and what a migration takes first (WAL journal on SQLite; an advisory lock,
  so one replica migrates at a time, on PostgreSQL);
- how several writes travel together (`together`: one statement of data-modifying CTEs on PostgreSQL, one
  round trip; one after the other on SQLite, where a statement costs no round trip).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import BindParameter, Connection, Select, Table, bindparam, event, func, literal_column, select, text
from sqlalchemy.dialects.postgresql import insert as postgres_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from sqlalchemy.sql.dml import UpdateBase

from ._sqlite_prepared import run_prepared, run_prepared_together

READ_ONLY = "memory_read_only"
"""An execution option on SQLite: this connection only reads (its transactions take no write lock)."""
PREPARED_STATEMENTS = 1000
"""Prepared statements asyncpg keeps per PostgreSQL connection (the least used one is dropped beyond)."""
_MIGRATION_LOCK = 7_300_451  # any constant: the advisory lock replicas take while one of them migrates


class Prepared:
    """A statement built once and the parameters it runs with: a write for `Dialect.together` on SQLite, which
    runs the writes one by one and so need not bind values into a new statement for each (building one, and
    then its cache key, cost about 0.13 ms of CPU more per statement than running the prebuilt one)."""

    __slots__ = ("statement", "parameters")

    def __init__(self, statement: Any, parameters: dict[str, Any] | list[dict[str, Any]]):
        self.statement = statement
        self.parameters = parameters


class Dialect:
    """The database's dialect: `sqlite` (aiosqlite) or `postgresql` (asyncpg)."""

    def __init__(self, name: str):
        self.name = name
        self.is_sqlite = name == "sqlite"

    @classmethod
    def of(cls, url: str) -> Dialect:
        return cls(make_url(url).get_backend_name())

    def __repr__(self) -> str:
        return f"Dialect({self.name!r})"

    def insert(self, table: Any) -> Any:
        """An INSERT into `table` that supports `.on_conflict_do_nothing(...)` and `.on_conflict_do_update(...)`."""
        return sqlite_insert(table) if self.is_sqlite else postgres_insert(table)

    def locked(self, statement: Select[Any], *, shared: bool = False) -> Select[Any]:
        """`statement`, locking the rows it reads until the transaction ends (`shared`: against writers
        only, FOR SHARE); SQLite: the transaction's write lock already serialises writers."""
        return statement if self.is_sqlite else statement.with_for_update(read=shared)

    async def take_row_lock(self, connection: AsyncConnection, statement: Any, parameters: dict[str, Any]) -> None:
        """Run a locking `statement` (a SELECT ... FOR UPDATE) where writers need row locks to take turns;
        on SQLite the write lock of BEGIN IMMEDIATE already makes them take turns."""
        if not self.is_sqlite:
            await connection.execute(statement, parameters)

    async def together(self, connection: AsyncConnection, *statements: UpdateBase | Prepared) -> list[int]:
        """Run the INSERT, UPDATE and DELETE `statements` as one, and return the rows each one wrote (with
        RETURNING: the rows it returned).

        On PostgreSQL they become one statement of data-modifying CTEs, one round trip: each sees the
        database as it was before all of them (none reads what another writes, and no two may write the same
        row), and foreign keys are checked once all are done (a parent and its child may be inserted
        together). On SQLite they run one after the other on `connection`, with the same effect for writes
        that meet those conditions. Atomic on both: give it `Storage.statement()` or a transaction.

        Give each statement's values through `row(...)`: two INSERTs of one statement cannot share the bind
        names SQLAlchemy gives a column's value (its key), which `row` makes unique. On SQLite a statement
        may also be `Prepared` (PostgreSQL needs every value bound into its statement).
        """
        if self.is_sqlite:
            if len(statements) > 1 and all(isinstance(statement, Prepared) for statement in statements):
                # one hand-off to the driver for all of them, where each can run from its compiled form
                prepared = [(s.statement, s.parameters) for s in statements if isinstance(s, Prepared)]
                written = await run_prepared_together(connection, prepared)
                if written is not None:
                    return written
            counts = []
            for statement in statements:
                result = await self.run(connection, statement)
                counts.append(len(result.all()) if result.returns_rows else result.rowcount)
            return counts
        bound: list[UpdateBase] = []
        for statement in statements:
            if isinstance(statement, Prepared):
                raise TypeError("on PostgreSQL a statement of `together` has its values bound: give it `row(...)`")
            bound.append(statement)
        parts = [
            (statement if statement.returning_column_descriptions else statement.returning(literal_column("1"))).cte(
                f"together_{n}"
            )
            for n, statement in enumerate(bound)
        ]
        counted = select(*(select(func.count()).select_from(part).scalar_subquery() for part in parts))
        return [int(count) for count in (await connection.execute(counted)).one()]

    async def run(self, connection: AsyncConnection, statement: UpdateBase | Prepared) -> Any:
        """Execute one write, `Prepared` or bound; its result. On SQLite a `Prepared` write runs from its
        compiled form where it can (`memory._sqlite_prepared`)."""
        if isinstance(statement, Prepared):
            if self.is_sqlite:
                ran = await run_prepared(connection, statement.statement, statement.parameters)
                if ran is not None:
                    return ran
            return await connection.execute(statement.statement, statement.parameters)
        return await connection.execute(statement)

    @staticmethod
    def row(table: Table, values: Mapping[str, Any], *, updating: bool = False) -> dict[str, BindParameter[Any]]:
        """`values` of `table`'s columns (by key) for an INSERT's or, `updating`, an UPDATE's `.values(...)` in
        `together`: each a bind of its own name, and the columns' Python-side defaults (`default`, or
        `onupdate` when `updating`) that `values` leaves out filled in, as SQLAlchemy would have."""
        bound: dict[str, BindParameter[Any]] = {}
        for column in table.columns:
            if column.key in values:
                value = values[column.key]
            else:
                default = column.onupdate if updating else column.default
                if default is None or not (default.is_scalar or default.is_callable):
                    continue
                value = default.arg(None) if default.is_callable else default.arg  # type: ignore[attr-defined]
            bound[column.key] = bindparam(None, value, type_=column.type, unique=True)
        return bound

    @property
    def read_options(self) -> dict[str, Any]:
        """Execution options of a connection that only reads: no BEGIN IMMEDIATE on SQLite (each statement
        reads a consistent snapshot, WAL readers never wait for the writer), autocommit on PostgreSQL."""
        return {READ_ONLY: True} if self.is_sqlite else {"isolation_level": "AUTOCOMMIT"}

    @property
    def engine_options(self) -> dict[str, Any]:
        """What the engine is made with. SQLite: the driver leaves transactions to us (`Storage` begins
        them) and waits up to 30 s for another writer's lock, through the adapter of `memory._sqlite_driver`
        (one hand-off to aiosqlite's thread per statement).

        PostgreSQL: asyncpg prepares each statement once per connection (a round trip of its own) and keeps
        it for the connection's life, in a cache of `PREPARED_STATEMENTS` (SQLAlchemy's default, 100, is
        fewer than the statements the bot runs, so some were prepared again and again). The pool hands out
        the connection given back last (`pool_use_lifo`): with the default, the one idle longest, work
        went round every pooled connection and prepared each statement on each of them; now sequential
        work stays on the same one or two, whose statements are prepared, and the others stay idle."""
        if not self.is_sqlite:
            return {"pool_use_lifo": True, "connect_args": {"prepared_statement_cache_size": PREPARED_STATEMENTS}}
        from ._sqlite_driver import DBAPI

        return {"connect_args": {"isolation_level": None, "timeout": 30}, "module": DBAPI}

    def configure(self, engine: AsyncEngine) -> None:
        """SQLite: foreign keys on, and every transaction takes the write lock up front (BEGIN IMMEDIATE),
        except on a connection that only reads (`read_options`).

        Two processes that both read and then write would otherwise deadlock on the lock upgrade, which
        SQLite answers with an immediate "database is locked" that no busy timeout can wait out.
        """
        if not self.is_sqlite:
            return

        @event.listens_for(engine.sync_engine, "connect")
        def _on_connect(dbapi_connection: Any, _record: Any) -> None:
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.close()

        @event.listens_for(engine.sync_engine, "begin")
        def _on_begin(connection: Connection) -> None:
            if not connection.get_execution_options().get(READ_ONLY):
                # a mark on the driver's connection (`memory._sqlite_driver`): BEGIN IMMEDIATE goes with the
                # transaction's first statement
                connection.connection.dbapi_connection.hold_begin()  # type: ignore[union-attr]

    async def before_migration(self, read_connection: AsyncConnection) -> None:
        """Outside any transaction: SQLite's journal mode is the database's, set once it stays (WAL)."""
        if self.is_sqlite:
            await read_connection.exec_driver_sql("PRAGMA journal_mode=WAL")

    async def lock_for_migration(self, connection: AsyncConnection) -> None:
        """Inside the migration's transaction: one replica migrates at a time (SQLite: the write lock)."""
        if not self.is_sqlite:
            await connection.execute(text(f"SELECT pg_advisory_xact_lock({_MIGRATION_LOCK})"))
