"""`Storage.statement()` and `Dialect.together(...)`: several writes that travel as one (one round trip on
PostgreSQL) are stored whole or not at all, on SQLite and on PostgreSQL (the `storage` fixture)."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest
from sqlalchemy import func, insert, select, text, update
from sqlalchemy.exc import IntegrityError

from memory import CommitOutcomeUnknownError, DatabaseAwayError
from memory.tables import MessageRow, RunRow, ThreadRow

RUNS, THREADS, MESSAGES = RunRow.__table__, ThreadRow.__table__, MessageRow.__table__


def a_run(run_id: str, thread_id: str = "thread-ü") -> dict[str, object]:
    return {"id": run_id, "agent_id": "agent", "thread_id": thread_id, "status": "running", "max_steps": 5}


def values(storage, table, **given):
    return storage.dialect.row(table, given)


async def count(storage, table, *where) -> int:
    async with storage.read() as connection:
        return (await connection.execute(select(func.count()).select_from(table).where(*where))).scalar_one()


async def test_a_parent_and_its_child_are_written_together_and_counted(storage):
    async with storage.statement() as connection:
        written = await storage.dialect.together(
            connection,
            insert(THREADS).values(values(storage, THREADS, id="thread-ü", resource_id="东京")),
            insert(RUNS).values(values(storage, RUNS, **a_run("run-1"))),
            insert(MESSAGES).values(
                values(storage, MESSAGES, run_id="run-1", thread_id="thread-ü", role="user", content="서울로 가요")
            ),
            update(RUNS).where(RUNS.c.id == "no-such-run").values(values(storage, RUNS, step=1)),
        )
    assert written == [1, 1, 1, 0]
    async with storage.read() as connection:
        said = (await connection.execute(select(MESSAGES.c.content).where(MESSAGES.c.run_id == "run-1"))).scalars()
        assert list(said) == ["서울로 가요"]


async def test_rows_returned_are_counted(storage):
    async with storage.statement() as connection:
        await storage.dialect.together(connection, insert(RUNS).values(values(storage, RUNS, **a_run("run-1"))))
    async with storage.statement() as connection:
        written = await storage.dialect.together(
            connection,
            update(RUNS).where(RUNS.c.id == "run-1", RUNS.c.step == 0).values(step=1).returning(RUNS.c.id),
            insert(MESSAGES)
            .values(values(storage, MESSAGES, run_id="run-1", role="assistant", content="مرحبا"))
            .returning(MESSAGES.c.id),
        )
    assert written == [1, 1]


@pytest.mark.parametrize("inside", ["statement", "transaction"])
async def test_writes_together_are_stored_whole_or_not_at_all(storage, inside):
    async with storage.statement() as connection:
        await storage.dialect.together(connection, insert(RUNS).values(values(storage, RUNS, **a_run("run-1"))))
    with pytest.raises(IntegrityError):
        async with getattr(storage, inside)() as connection:
            await storage.dialect.together(
                connection,
                insert(MESSAGES).values(values(storage, MESSAGES, run_id="run-1", role="user", content="Ünïcödé")),
                insert(RUNS).values(values(storage, RUNS, **a_run("run-1"))),  # its key is taken: the whole fails
            )
    assert await count(storage, MESSAGES) == 0
    assert await count(storage, RUNS) == 1


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
async def test_a_statement_on_a_connection_the_server_closed_can_be_tried_again(storage, database_url):
    """A pooled connection the server ended (a restart): the statement never left, so nothing is stored and
    the error says the database was away, which the stores try again, not that the outcome is unknown."""
    async with storage.statement() as connection:
        backend = (await connection.execute(text("SELECT pg_backend_pid()"))).scalar_one()
    other = await asyncpg.connect(database_url.replace("+asyncpg", ""))
    try:
        await other.execute("SELECT pg_terminate_backend($1)", backend)
    finally:
        await other.close()
    await asyncio.sleep(0.3)  # the client reads the server's goodbye: its connection is closed
    with pytest.raises(DatabaseAwayError) as raised:
        async with storage.statement() as connection:
            await storage.dialect.together(connection, insert(RUNS).values(values(storage, RUNS, **a_run("run-1"))))
    assert not isinstance(raised.value, CommitOutcomeUnknownError)
    async with storage.statement() as connection:  # the pool dropped the closed connection
        await storage.dialect.together(connection, insert(RUNS).values(values(storage, RUNS, **a_run("run-1"))))
    assert await count(storage, RUNS) == 1


async def test_rows_and_updates_built_for_together_fill_defaults_and_bind_their_where(storage):
    from memory._run_sql import UPDATE_RUN, inserted, updated

    dialect = storage.dialect
    async with storage.statement() as connection:
        written = await dialect.together(
            connection,
            *inserted(dialect, RUNS, [a_run("run-1"), a_run("run-2") | {"step": 3}]),  # two rows, other columns
            *inserted(dialect, MESSAGES, [{"run_id": "run-1", "role": "user", "content": "Grüße"}]),
        )
    assert sum(written) == 3
    async with storage.statement() as connection:
        assert await dialect.together(connection, updated(dialect, UPDATE_RUN, {"step": 7}, b_run="run-1")) == [1]
    async with storage.read() as connection:
        runs = (await connection.execute(select(RUNS.c.id, RUNS.c.step, RUNS.c.created_at).order_by(RUNS.c.id))).all()
        said = (await connection.execute(select(MESSAGES.c.content, MESSAGES.c.created_at))).one()
    assert [(run.id, run.step) for run in runs] == [("run-1", 7), ("run-2", 3)]
    assert all(run.created_at is not None for run in runs) and said.content == "Grüße" and said.created_at is not None
