"""Statements stay prepared: on PostgreSQL, work that comes one piece after another runs on the connection
given back last, not on each pooled connection in turn (each would prepare every statement once more)."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import text


async def test_work_one_after_another_stays_on_the_connection_given_back_last(storage):
    if storage.is_sqlite:
        pytest.skip("SQLite prepares nothing per connection")
    backend = text("SELECT pg_backend_pid()")

    async def hold(release: asyncio.Event) -> int:
        async with storage.read() as connection:
            pid = (await connection.execute(backend)).scalar_one()
            await release.wait()
            return pid

    release = asyncio.Event()
    holding = [asyncio.ensure_future(hold(release)) for _ in range(4)]  # a burst opens four connections
    await asyncio.sleep(0.2)
    release.set()
    assert len(set(await asyncio.gather(*holding))) == 4
    pids = []
    for _ in range(8):
        async with storage.read() as connection:
            pids.append((await connection.execute(backend)).scalar_one())
    assert len(set(pids)) == 1, f"one piece after another went round {len(set(pids))} connections"
