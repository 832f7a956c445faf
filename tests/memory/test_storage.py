"""`Storage` objects on one URL share their connections until the last is closed, and a read never
waits for a writer. On SQLite and PostgreSQL (the reader test: SQLite, whose writer locks the file)."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading

import asyncpg
from sqlalchemy import insert
from sqlalchemy.engine import make_url

from memory import Storage, StoredRun
from memory.tables import MessageRow, utcnow
from tests.support.rows import a_run


async def add_message(storage: Storage, run: StoredRun, content: str) -> None:
    """A write of one message of `run`, in a transaction of its own."""
    async with storage.transaction() as connection:
        await connection.execute(
            insert(MessageRow.__table__).values(run_id=run.id, role="user", content=content, created_at=utcnow())
        )


async def open_connections(database_url: str) -> int:
    """Connections this process (or anyone) holds to the database: file handles for SQLite, sessions
    for PostgreSQL."""
    url = make_url(database_url)
    if url.get_backend_name() == "sqlite":
        path = os.path.realpath(url.database)
        links = [os.path.realpath(f"/proc/self/fd/{fd}") for fd in os.listdir("/proc/self/fd")]
        return sum(1 for link in links if link == path)
    admin = await asyncpg.connect(host="127.0.0.1", port=5432, user="postgres", database="postgres")
    try:
        return await admin.fetchval("SELECT count(*) FROM pg_stat_activity WHERE datname = $1", url.database)
    finally:
        await admin.close()


async def test_storages_of_one_url_share_connections_until_the_last_is_closed(database_url):
    first, second = Storage(database_url), Storage(database_url)
    run = a_run()
    await first.runs.create_run(run, [{"role": "user", "content": "hello"}])
    await first.close()

    # the other one goes on as before, on connections of its own if it needs them
    assert (await second.runs.get_run(run.id)).status == "running"
    assert await second.runs.run_messages(run.id) == [{"role": "user", "content": "hello"}]
    assert await open_connections(database_url) > 0

    pool = second.engine.sync_engine.pool
    await second.close()
    assert await open_connections(database_url) == 0

    # a Storage made afterwards opens the database again, in the same pool (every connection was back in it)
    third = Storage(database_url)
    try:
        assert (await third.runs.get_run(run.id)).id == run.id
        assert third.engine.sync_engine.pool is pool
    finally:
        await third.close()
    assert await open_connections(database_url) == 0


async def test_a_read_does_not_wait_for_another_process_writing(tmp_path):
    """Another process holds SQLite's write lock (a long transaction); reading runs, messages and
    policies goes on meanwhile, and the next write waits for the lock instead of failing."""
    url = f"sqlite+aiosqlite:///{tmp_path}/bot.db"
    storage = Storage(url)
    run = a_run()
    await storage.runs.create_run(run, [{"role": "user", "content": "hello"}])

    locked, release = threading.Event(), threading.Event()

    def writer() -> None:
        connection = sqlite3.connect(tmp_path / "bot.db", isolation_level=None)
        connection.execute("BEGIN IMMEDIATE")
        connection.execute("UPDATE runs SET owner = 'someone else'")
        locked.set()
        release.wait(10)
        connection.execute("COMMIT")
        connection.close()

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        assert await asyncio.to_thread(locked.wait, 5)
        async with asyncio.timeout(2):
            assert (await storage.runs.get_run(run.id)).owner is None  # the committed state, not the writer's
            assert len(await storage.runs.run_messages(run.id)) == 1
            assert (await storage.policies.get("any-tool")).version == 0
        write = asyncio.create_task(add_message(storage, run, "again"))
        await asyncio.sleep(0.3)
        assert not write.done()  # it waits for the lock ...
        release.set()
        await asyncio.wait_for(write, 10)  # ... and gets it
        assert len(await storage.runs.run_messages(run.id)) == 2
        assert (await storage.runs.get_run(run.id)).owner == "someone else"
    finally:
        release.set()
        await asyncio.to_thread(thread.join)
        await storage.close()
