"""SQLAlchemy's aiosqlite adapter, with one hand-off to the driver's thread per statement.

aiosqlite runs every call on the sqlite3 connection in a thread of its own; each call is a hand-off
(queued to the thread, then the event loop woken with the answer) that costs about 0.1 ms of CPU, more
than a small statement itself. SQLAlchemy's adapter makes three or four of them per statement (open a
cursor, execute, fetch the rows, close the cursor) and one for each COMMIT and ROLLBACK, also when no
transaction is open (the pool rolls back every connection it takes back). Here a statement is one
function run in the driver's thread (open, execute, fetch, close), and a COMMIT or ROLLBACK with no
transaction open is not sent: a write transaction of three statements goes from about 16 hand-offs to 5.
The write transaction's `BEGIN IMMEDIATE` waits for the transaction's first statement and goes with it, in
its hand-off (4); a transaction with no statement sends neither BEGIN nor COMMIT. SQLite takes the write lock
at that statement then, which is when the transaction first touches the database. `dialects.py` asks for it
with `hold_begin`, not as a statement: SQLAlchemy would run its whole execution of a statement (a cursor, an
execution context, a result) for what is only a mark on the connection.
A new connection's setup (SQLAlchemy's `regexp` and `floor` functions, `PRAGMA foreign_keys=ON` of
`dialects.py`) likewise waits for its first statement and runs before it, in its hand-off: three hand-offs
fewer per connection, which the runtime opens again after each restart (and `Storage` after each close).

Everything else is SQLAlchemy's adapter as it is (server-side cursors included). It runs a function in
aiosqlite's thread with `Connection._execute`, the way SQLAlchemy's own adapter reaches into aiosqlite
(`_tx`, `_conn`); `tests/storage` runs every store through it.
"""

from __future__ import annotations

import sqlite3
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, cast

import aiosqlite
from sqlalchemy.dialects.sqlite.aiosqlite import (
    AsyncAdapt_aiosqlite_connection,
    AsyncAdapt_aiosqlite_cursor,
    AsyncAdapt_aiosqlite_dbapi,
)
from sqlalchemy.util import EMPTY_DICT

BEGIN_WRITE = "BEGIN IMMEDIATE"
"""What begins a write transaction (`hold_begin`): held back and sent with the first statement."""
FOREIGN_KEYS_ON = "PRAGMA foreign_keys=ON"
"""What `dialects.py` sends on every new connection: held back and run before its first statement (outside
any transaction, where SQLite takes it)."""

_Setup = tuple[str, tuple[Any, ...], dict[str, Any]]
"""A new connection's setup held back for its first statement: ("function", args, kw) for
`create_function`, ("sql", (statement,), {}) for a statement."""


def _run_statement(
    connection: sqlite3.Connection,
    operation: str,
    parameters: Any,
    many: bool,
    begin: bool = False,
    setup: Sequence[_Setup] = (),
) -> tuple[Any, Sequence[Any], int, Any]:
    """In the driver's thread: the connection's held-back `setup` first, then `BEGIN IMMEDIATE` if `begin`,
    then the statement; its description, rows, row count and last row id."""
    _set_up(connection, setup, begin=begin)
    cursor = connection.cursor()
    try:
        if many:
            cursor.executemany(operation, parameters)
        elif parameters is None:
            cursor.execute(operation)
        else:
            cursor.execute(operation, parameters)
        description = cursor.description
        rows = cursor.fetchall() if description else ()
        return description, rows, cursor.rowcount, cursor.lastrowid
    finally:
        cursor.close()


def _set_up(connection: sqlite3.Connection, setup: Sequence[_Setup], *, begin: bool) -> None:
    """In the driver's thread, before a statement: the connection's held-back `setup`, then `BEGIN IMMEDIATE`
    if `begin`."""
    for kind, args, kw in setup:
        if kind == "function":
            connection.create_function(*args, **kw)
        else:
            connection.execute(*args)
    if begin:
        connection.execute(BEGIN_WRITE)


def _run_writes(
    connection: sqlite3.Connection,
    writes: Sequence[tuple[str, Any, bool]],
    begin: bool = False,
    setup: Sequence[_Setup] = (),
) -> tuple[list[int], int | None, sqlite3.Error | None]:
    """In the driver's thread: like `_run_statement`, for the writes (statement, parameters, executemany) one
    after the other, up to the first that fails; the row count of each that ran, and the index and error of
    the one that failed (None, None when none did)."""
    _set_up(connection, setup, begin=begin)
    counts: list[int] = []
    for index, (operation, parameters, many) in enumerate(writes):
        cursor = connection.cursor()
        try:
            if many:
                cursor.executemany(operation, parameters)
            else:
                cursor.execute(operation, parameters)
            counts.append(cursor.rowcount)
        except sqlite3.Error as exc:
            return counts, index, exc
        finally:
            cursor.close()
    return counts, None, None


class _Cursor(AsyncAdapt_aiosqlite_cursor):
    """A cursor that holds a statement's outcome, read in the same hand-off as the statement ran."""

    __slots__ = ("_description", "_rowcount", "_lastrowid")

    def __init__(self, adapt_connection: AsyncAdapt_aiosqlite_connection):
        # no driver cursor is opened here: each statement opens and closes its own in the driver's thread
        self._adapt_connection = adapt_connection
        self._connection = adapt_connection._connection
        self._cursor = None  # type: ignore[assignment]  # no driver cursor stays open between statements
        self._soft_closed_memoized = EMPTY_DICT
        self._rows = deque()
        self._description = None
        self._rowcount = -1
        self._lastrowid = None

    @property
    def description(self) -> Any:
        return self._description

    @property
    def rowcount(self) -> int:
        return self._rowcount

    @property
    def lastrowid(self) -> Any:
        return self._lastrowid

    async def _execute_async(self, operation: Any, parameters: Any) -> None:
        await self._run(operation, parameters, many=False)

    async def _executemany_async(self, operation: Any, seq_of_parameters: Any) -> None:
        await self._run(operation, seq_of_parameters, many=True)

    async def _run(self, operation: Any, parameters: Any, *, many: bool) -> None:
        adapt = cast(_Connection, self._adapt_connection)
        if operation in (BEGIN_WRITE, FOREIGN_KEYS_ON) and not many:
            if operation == BEGIN_WRITE:
                adapt._begin_held = True  # sent with the next statement
            else:
                adapt._setup_held.append(("sql", (operation,), {}))  # run before the next statement
            self._description, self._rowcount, self._lastrowid, self._rows = None, -1, None, deque()
            return
        self._description, rows, self._rowcount, self._lastrowid = await adapt.run(operation, parameters, many=many)
        self._rows = deque(rows)

    async def _async_soft_close(self) -> None:
        """Nothing stays open between statements: the rows are already here."""

    def close(self) -> None:
        self._rows.clear()


class _Connection(AsyncAdapt_aiosqlite_connection):
    """Sends COMMIT and ROLLBACK only when a transaction is open, a held-back BEGIN with the next statement, and
    the connection's setup (functions, `PRAGMA foreign_keys=ON`) before its first statement."""

    __slots__ = ("_begin_held", "_setup_held")

    _cursor_cls = _Cursor  # type: ignore[assignment]  # SQLAlchemy's stub names its own cursor class only

    def __init__(self, dbapi: Any, connection: Any):
        super().__init__(dbapi, connection)
        self._begin_held = False
        self._setup_held: list[_Setup] = []

    async def run(self, operation: str, parameters: Any, *, many: bool) -> tuple[Any, Sequence[Any], int, Any]:
        """Run one statement in the driver's thread, in one hand-off (with a held-back BEGIN and setup); its
        description, rows, row count and last row id."""
        outcome: tuple[Any, Sequence[Any], int, Any] = await self._handed_off(
            _run_statement, operation, parameters, many
        )
        return outcome

    async def run_writes(
        self, writes: Sequence[tuple[str, Any, bool]]
    ) -> tuple[list[int], int | None, sqlite3.Error | None]:
        """Run the writes (statement, parameters, executemany) one after the other in one hand-off, up to the
        first that fails (see `_run_writes`)."""
        outcome: tuple[list[int], int | None, sqlite3.Error | None] = await self._handed_off(_run_writes, writes)
        return outcome

    async def _handed_off(self, function: Callable[..., Any], *args: Any) -> Any:
        """`function(connection, *args, begin, setup)` in the driver's thread, in one hand-off: the held-back
        BEGIN and setup go with it."""
        begin, self._begin_held = self._begin_held, False
        setup, self._setup_held = self._setup_held, []
        async with self._execute_mutex:
            return await self._connection._execute(function, self._connection._conn, *args, begin, setup)

    def hold_begin(self) -> None:
        """Begin a write transaction: `BEGIN IMMEDIATE` is sent with the next statement, in its hand-off."""
        self._begin_held = True

    def create_function(self, *args: Any, **kw: Any) -> None:
        """Registered in the driver's thread before the connection's next statement (none can use it sooner)."""
        self._setup_held.append(("function", args, kw))

    def rollback(self) -> None:
        self._begin_held = False
        if self._connection._connection and self._connection.in_transaction:
            super().rollback()

    def commit(self) -> None:
        self._begin_held = False
        if self._connection._connection and self._connection.in_transaction:
            super().commit()


class _Dbapi(AsyncAdapt_aiosqlite_dbapi):
    def connect(self, *arg: Any, **kw: Any) -> _Connection:
        connection = super().connect(*arg, **kw)
        return _Connection(self, connection._connection)


DBAPI = _Dbapi(aiosqlite, sqlite3)
"""The DBAPI module an aiosqlite engine is given (`create_async_engine(..., module=DBAPI)`)."""
