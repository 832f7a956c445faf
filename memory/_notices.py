"""Work notices: the sweeps of an idle replica sleep instead of polling, and wake when any replica creates work.

On PostgreSQL, triggers (the runtime's migration `0017_work_notices`, and the adapters' own for their tables)
send `NOTIFY bot_work, '<table>'` when a statement adds or moves work a sweep looks after: a run's status, a
call's state, a policy. One connection per process listens (`LISTEN bot_work`, its only statement until it
is lost); a sweep waits on `WorkNotices.wait(...)` for a notice of the tables it cares about, for at most
the time to its next known deadline. The trigger costs the writer no round trip: the notice travels with
its COMMIT, and one that rolls back sends none.

On SQLite nothing is heard (`listening` is False): the sweeps poll, as they always did.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any, Protocol

from sqlalchemy.ext.asyncio import AsyncEngine


class _Listened(Protocol):
    """What the notices need of their `Storage` (named here, not imported: the storage makes its notices)."""

    is_sqlite: bool
    engine: AsyncEngine

    async def migrate(self) -> None: ...


log = logging.getLogger("memory")

WORK_CHANNEL = "bot_work"
"""The channel of the work notices; the payload is the table whose rows changed."""

IDLE_PASS = 120.0
"""Seconds a sweep that knows of no deadline and heard of no work sleeps before it looks anyway: a notice
lost with its connection is covered by the pass that listening again starts, so this is a last resort."""
_CHECK_CONNECTION = 30.0
"""Seconds between two looks (no statement) at whether the listening connection is still open."""
_RETRY_LISTEN = 5.0
"""Seconds between two tries to listen again after the listening connection was lost."""


class WorkNotices:
    """The work notices of one `Storage` (see the module docstring)."""

    def __init__(self, storage: _Listened):
        self._storage = storage
        self._changed: dict[str, float] = {}
        """Per table, when (monotonic) the last notice of it came."""
        self._event: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self.listening = False
        """Whether notices are heard now (PostgreSQL, the listening connection open)."""
        self._lost_at = 0.0
        """When (monotonic) listening last started or was lost: a sweep that waited across it passes again."""

    @property
    def possible(self) -> bool:
        """Whether this database sends notices at all (PostgreSQL); on SQLite the sweeps poll."""
        return not self._storage.is_sqlite

    async def wait(self, timeout: float, tables: tuple[str, ...], *, since: float | None = None) -> bool:
        """Wait up to `timeout` seconds for a notice of one of `tables` (or, with `since`, return at once if
        one came after that monotonic time); True if one came, or if listening started or was lost meanwhile
        (what happened then is unknown: the sweep passes again). Without notices (SQLite), just sleeps."""
        if not self.possible:
            await asyncio.sleep(timeout)
            return False
        self._start()
        assert self._event is not None
        begun = time.monotonic() if since is None else since
        deadline = time.monotonic() + timeout
        while True:
            if self._heard_since(begun, tables):
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self._event.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._event.wait(), left)

    async def pause(self, every: float, *, since: float, due: float | None, tables: tuple[str, ...]) -> None:
        """Sleep between two passes of a sweep: the pass began at `since` (monotonic) and knows its next deadline
        is `due` seconds away (None: it knows of none). Where notices are heard, until that deadline (at least
        `every`, at most `IDLE_PASS`) or, once a notice of one of `tables` came (during the pass too), `every`
        seconds after it; elsewhere (SQLite, or while listening is not yet or no longer possible) `every`."""
        if not self.possible:
            await asyncio.sleep(every)
            return
        self._start()
        if not self.listening:
            await asyncio.sleep(every)
            return
        limit = IDLE_PASS if due is None else min(max(due, every), IDLE_PASS)
        if await self.wait(limit, tables, since=since):
            await asyncio.sleep(every)

    def _heard_since(self, begun: float, tables: tuple[str, ...]) -> bool:
        if self._lost_at > begun:
            return True
        return any(self._changed.get(table, 0.0) > begun for table in tables)

    def _start(self) -> None:
        if self._event is None:
            self._event = asyncio.Event()
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._listen(), name="work notices")

    def _heard(self, payload: str) -> None:
        self._changed[payload] = time.monotonic()
        if self._event is not None:
            self._event.set()

    def _moved(self) -> None:
        """Listening started or stopped: whatever a sweep knew may be stale."""
        self._lost_at = time.monotonic()
        if self._event is not None:
            self._event.set()

    async def _listen(self) -> None:
        while True:
            try:
                await self._listen_once()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - the database away: the sweeps wake, and try again later
                log.debug("work notices: cannot listen (%s); trying again in %gs", exc, _RETRY_LISTEN)
            if self.listening:
                self.listening = False
                self._moved()
            await asyncio.sleep(_RETRY_LISTEN)

    async def _listen_once(self) -> None:
        """Listen on a connection of its own until it is lost (its only statement is the LISTEN)."""
        await self._storage.migrate()  # the triggers are there (a no-op once done in this process)
        async with self._storage.engine.connect() as connection:
            raw = (await connection.get_raw_connection()).driver_connection
            assert raw is not None, "an open connection has its driver's connection"
            lost = asyncio.Event()
            raw.add_termination_listener(lambda _connection: lost.set())

            def on_notify(_connection: Any, _pid: int, _channel: str, payload: str) -> None:
                self._heard(payload)

            await raw.add_listener(WORK_CHANNEL, on_notify)
            self.listening = True
            self._moved()
            while not lost.is_set() and not raw.is_closed():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(lost.wait(), _CHECK_CONNECTION)
            # the connection is gone: nothing to remove the listener from; the pool drops it

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        self.listening = False
