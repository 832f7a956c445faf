"""The SQLite driver (`memory/_sqlite_driver.py`): a write transaction's BEGIN IMMEDIATE is held back and
sent with its first statement, so the write lock is taken there and kept until the end; a transaction
that sends no statement takes no lock and commits nothing. A new connection's setup (foreign keys on,
SQLAlchemy's SQL functions) is held back too and runs before its first statement."""

from __future__ import annotations

import sqlite3

import pytest
from sqlalchemy import func, insert, literal, select
from sqlalchemy.exc import IntegrityError

from memory import Storage
from memory.tables import MessageRow, ThreadRow
from tests.support.statements import statements_of


@pytest.fixture
async def sqlite_storage(tmp_path):
    storage = Storage(f"sqlite+aiosqlite:///{tmp_path}/driver.db")
    await storage.migrate()
    yield storage, tmp_path / "driver.db"
    await storage.close()


def another_writer_gets_in(path) -> bool:
    """Whether a writer of another connection, waiting for nothing, gets the write lock now."""
    connection = sqlite3.connect(path, timeout=0)
    try:
        connection.execute("BEGIN IMMEDIATE")
        connection.rollback()
        return True
    except sqlite3.OperationalError:  # database is locked
        return False
    finally:
        connection.close()


async def test_the_write_lock_is_taken_with_the_first_statement_and_kept_to_the_end(sqlite_storage):
    storage, path = sqlite_storage
    with statements_of(storage) as seen:
        async with storage.transaction() as connection:
            assert another_writer_gets_in(path)  # begun, nothing sent yet
            await connection.execute(insert(ThreadRow).values(id="スレッド-1", resource_id="utilisateur-é"))
            assert not another_writer_gets_in(path)
            await connection.execute(insert(ThreadRow).values(id="스레드-2", resource_id="utilisateur-é"))
            assert not another_writer_gets_in(path)
    assert another_writer_gets_in(path)
    assert [statement.split(" ")[0] for statement in seen] == ["INSERT", "INSERT"]  # BEGIN is a mark, no statement
    async with storage.read() as connection:
        assert await connection.scalar(select(func.count()).select_from(ThreadRow)) == 2


async def test_a_failed_transaction_leaves_nothing_and_no_lock(sqlite_storage):
    storage, path = sqlite_storage
    with pytest.raises(RuntimeError):
        async with storage.transaction() as connection:
            await connection.execute(insert(ThreadRow).values(id="مرحبا", resource_id="u"))
            raise RuntimeError("the caller failed after its first statement")
    assert another_writer_gets_in(path)
    async with storage.transaction():  # nothing sent: no BEGIN, no COMMIT
        pass
    async with storage.read() as connection:
        assert await connection.scalar(select(func.count()).select_from(ThreadRow)) == 0


async def test_a_new_connection_is_set_up_before_its_first_statement(sqlite_storage):
    storage, path = sqlite_storage
    await storage.close()  # every connection closed: the next statements run on new ones
    storage = Storage(f"sqlite+aiosqlite:///{path}")
    try:
        with pytest.raises(IntegrityError, match="FOREIGN KEY"):  # the first statement of its connection
            async with storage.transaction() as connection:
                await connection.execute(insert(MessageRow).values(run_id="no-such-run", role="user", content="é"))
        await storage.close()
        storage = Storage(f"sqlite+aiosqlite:///{path}")
        async with storage.read() as connection:  # SQLAlchemy's functions, registered with the first statement
            assert await connection.scalar(select(literal("スレッド-1").regexp_match("ッド-[0-9]"))) == 1
            assert await connection.scalar(select(func.floor(2.5))) == 2
            assert await connection.scalar(select(func.count()).select_from(MessageRow)) == 0
    finally:
        await storage.close()
