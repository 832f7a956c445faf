"""The SQL statements a `Storage` runs while a block runs, as the driver gets them (whitespace folded): how
the tests see that an action reads or writes what it should, once."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import event


@contextmanager
def statements_of(storage: Any, *, begins: bool = True) -> Iterator[list[str]]:
    """The statements `storage` runs meanwhile, in order (each statement of `Dialect.together` on SQLite);
    `begins=False` leaves out BEGIN (SQLite's; PostgreSQL's autocommit has none)."""
    seen: list[str] = []

    def record(_connection: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if begins or not statement.lstrip().upper().startswith("BEGIN"):
            seen.append(" ".join(statement.split()))

    with _listening(storage, "before_cursor_execute", record):
        yield seen


@contextmanager
def transactions_of(storage: Any) -> Iterator[list[str]]:
    """The transactions `storage` begins meanwhile on PostgreSQL (a BEGIN ... COMMIT each; not autocommit)."""
    begun: list[str] = []

    def record(connection: Any) -> None:
        if connection.get_execution_options().get("isolation_level") != "AUTOCOMMIT":
            begun.append("BEGIN")

    with _listening(storage, "begin", record):
        yield begun


@contextmanager
def _listening(storage: Any, name: str, record: Any) -> Iterator[None]:
    engine = storage.engine.sync_engine
    event.listen(engine, name, record)
    try:
        yield
    finally:
        event.remove(engine, name, record)
