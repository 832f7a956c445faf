"""A turn cancelled while it holds a database session closes its connection quietly (issue 19).

Under load the bot logged `Exception closing connection ... CancelledError` tracebacks on PostgreSQL: a
turn's task was cancelled (a shutdown, a client gone) while SQLAlchemy returned its connection to the
pool, and the asyncpg close that returned an overflow connection was itself cancelled. Here turns hold
each kind of `Storage` session at once (more than the pool keeps, so some connections are overflow and
are closed on return) and are cancelled, once and again while they clean up, at every point of the
clean-up the event loop passes through (counted in loop iterations, no sleeps).
"""

from __future__ import annotations

import asyncio
import logging

import pytest
from sqlalchemy import text

from memory import Storage

KINDS = ("session", "transaction", "read", "read_session")


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


async def _turn(storage: Storage, kind: str, inside: asyncio.Event) -> None:
    async with getattr(storage, kind)() as held:
        await held.execute(text("SELECT 1"))
        inside.set()
        await asyncio.Event().wait()  # a turn waiting on the model, holding its session


def _kinds(storage: Storage, round: int) -> list[str]:
    """The sessions held at once: every kind twice; on SQLite one writer at a time (the others would wait
    for its write lock), each writer kind in turn."""
    if storage.is_sqlite:
        return ["read", "read_session", "read", "read_session", ("session", "transaction")[round % 2]]
    return [*KINDS, *KINDS]


async def _cancelled_turns(storage: Storage, round: int, second_cancel_after: int) -> None:
    kinds = _kinds(storage, round)
    entered = [asyncio.Event() for _ in kinds]
    tasks = [asyncio.create_task(_turn(storage, kind, inside)) for kind, inside in zip(kinds, entered, strict=True)]
    for inside in entered:
        await inside.wait()
    for task in tasks:
        task.cancel()
    for _ in range(second_cancel_after):
        await asyncio.sleep(0)
    for task in tasks:
        task.cancel()  # cancelled again while it rolls back and gives its connection back
    results = await asyncio.gather(*tasks, return_exceptions=True)
    assert all(isinstance(result, asyncio.CancelledError) for result in results), results


async def test_a_cancelled_turn_closes_its_connection_quietly(database_url):
    storage = Storage(database_url, pool_size=1, max_overflow=len(KINDS) * 2)
    await storage.migrate()
    records = _Records()
    logging.getLogger().addHandler(records)
    loop = asyncio.get_running_loop()
    unretrieved: list[dict] = []
    previous_handler = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: unretrieved.append(context))
    try:
        for round, second_cancel_after in enumerate(range(0, 40, 3)):
            await _cancelled_turns(storage, round, second_cancel_after)
        # the pool still serves, every connection back or closed: a new turn of each kind works
        for kind in KINDS:
            async with getattr(storage, kind)() as held:
                assert (await held.execute(text("SELECT 1"))).scalar() == 1
        assert storage.engine.pool.checkedout() == 0
    finally:
        logging.getLogger().removeHandler(records)
        loop.set_exception_handler(previous_handler)
        await storage.close()
    errors = [(record.name, record.getMessage()[:120], bool(record.exc_info)) for record in records.records]
    assert errors == [], errors
    assert [context.get("message") for context in unretrieved] == []


@pytest.mark.parametrize("kind", ["session", "transaction"])
async def test_a_turn_that_is_not_cancelled_commits_or_rolls_back_as_before(storage, kind):
    """The quiet end changes nothing for a turn that is not cancelled: what it wrote is committed, and a
    turn that fails leaves nothing of its work."""
    async with storage.transaction() as connection:
        await connection.execute(text("CREATE TABLE IF NOT EXISTS kept (note TEXT)"))
    async with getattr(storage, kind)() as held:
        await held.execute(text("INSERT INTO kept VALUES ('北京, 東京, 서울, café, שלום')"))
    with pytest.raises(ValueError, match="bad input"):
        async with getattr(storage, kind)() as held:
            await held.execute(text("INSERT INTO kept VALUES ('lost')"))
            raise ValueError("bad input")
    async with storage.read() as connection:
        assert (await connection.execute(text("SELECT note FROM kept"))).scalars().all() == [
            "北京, 東京, 서울, café, שלום"
        ]


def _cancel_after(loop: asyncio.AbstractEventLoop, task: asyncio.Task, iterations: int) -> None:
    """Cancel `task` once, `iterations` turns of the event loop from now."""
    if iterations == 0:
        task.cancel()
    else:
        loop.call_soon(_cancel_after, loop, task, iterations - 1)


@pytest.mark.parametrize("kind", KINDS)
async def test_a_cancellation_during_the_end_of_a_session_is_never_lost(storage, kind):
    """A task cancelled once, at any point of its session's end (the last turn of the loop included, when
    the end has just finished), ends cancelled: it does not go on as if nothing happened. A sweep that
    lost its one cancellation that way never stopped, and `python -m bot dev` hung on Ctrl-C."""
    loop = asyncio.get_running_loop()
    went_on: list[int] = []

    async def turn(iterations: int) -> None:
        async with getattr(storage, kind)() as held:
            await held.execute(text("SELECT 1"))
            _cancel_after(loop, asyncio.current_task(), iterations)
        went_on.append(iterations)  # reached only when the cancellation was lost or lands later
        await asyncio.Event().wait()  # a later cancellation lands here

    for iterations in range(40):
        task = asyncio.create_task(turn(iterations))
        done, _ = await asyncio.wait({task}, timeout=10)
        assert done, f"cancelled {iterations} loop turns into the end of a {kind}: the task never stopped"
        assert task.cancelled()
    async with getattr(storage, kind)() as held:  # the pool still serves
        assert (await held.execute(text("SELECT 1"))).scalar() == 1
