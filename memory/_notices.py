"""Work notices: the sweeps of an idle replica sleep instead of polling, and wake when any replica creates work.

On PostgreSQL, triggers (the runtime's migration `0017_work_notices`, and the adapters' own for their tables)
send `NOTIFY bot_work, '<table>'` when a statement adds or moves work a sweep looks after: a run's status, a
call's state, a policy. One connection per process listens (`LISTEN bot_work`, its only statement until it
is lost); a sweep waits on `WorkNotices.wait(...)` for a notice of the tables it cares about, for at most
the time to its next known deadline. The trigger costs the writer no round trip: the notice travels with
its COMMIT, and one that rolls back sends none.

A notice this replica's own statement sent (the notifying backend is one of its connections: its storage's
pool, or another engine it counts as its own, `count_as_own`) wakes no sweep at once: the replica did that
work itself and goes on with it. A sweep says, per table, how soon the earliest deadline such work can
create may come (`pause`'s `own_after`: a run's lease goes stale `stale_after` after its last beat, a call
expires `expires_after` after it began to wait), and passes that long after the first such notice instead,
so the deadline is still met; work another replica created wakes it as before. Which replica sent a notice
is told by its backend's process id, so two `Storage` objects of one process that share an engine (a test's
two "replicas") count as one: their notices only come later, never after a deadline.

On SQLite nothing is heard (`listening` is False): the sweeps poll, as they always did.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import weakref
from collections.abc import Mapping
from typing import Any, Protocol

from sqlalchemy import event
from sqlalchemy.engine import Engine
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
_CLOSE_WAIT = 5.0
"""Seconds `close` waits for the listening task to end once cancelled."""
_OWN_STRETCH = 1.0
"""Own notices less than this many seconds apart are kept as one stretch (first, last) of notices."""
_OWN_KEPT = 600.0
"""Seconds an own notice is remembered (longer than any sweep's pass and `own_after`)."""

_PIDS: weakref.WeakKeyDictionary[Engine, set[int]] = weakref.WeakKeyDictionary()
"""Per engine, the server process ids of its open connections (`_pids_of`)."""


def _pids_of(engine: Engine) -> set[int]:
    """The server process ids of `engine`'s open connections, kept up to date from now on (pool events)."""
    pids = _PIDS.get(engine)
    if pids is not None:
        return pids
    pids = _PIDS[engine] = set()

    def opened(dbapi_connection: Any, record: Any) -> None:
        server_pid = getattr(getattr(dbapi_connection, "driver_connection", None), "get_server_pid", None)
        pid = server_pid() if server_pid is not None else None
        if pid:
            record.info["server_pid"] = pid
            pids.add(pid)

    def closed(_dbapi_connection: Any, record: Any) -> None:
        pids.discard(record.info.pop("server_pid", None))

    event.listen(engine, "connect", opened)
    event.listen(engine, "close", closed)
    return pids


class WorkNotices:
    """The work notices of one `Storage` (see the module docstring)."""

    def __init__(self, storage: _Listened):
        self._storage = storage
        self._changed: dict[str, float] = {}
        """Per table, when (monotonic) the last notice of it from another replica came."""
        self._own: dict[str, list[list[float]]] = {}
        """Per table, the stretches [first, last] (monotonic) of this replica's own notices, oldest first."""
        self._engines: list[Engine] = []
        """The engines whose connections' notices are this replica's own."""
        self._event: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self.listening = False
        """Whether notices are heard now (PostgreSQL, the listening connection open)."""
        self._lost_at = 0.0
        """When (monotonic) listening last started or was lost: a sweep that waited across it passes again."""
        self.count_as_own(storage.engine)

    def count_as_own(self, engine: AsyncEngine) -> None:
        """Count the notices that `engine`'s connections send as this replica's own (the storage's engine
        is; another engine of the same process, such as the Slack intake thread's, may be). Call it before
        `engine` opens a connection: one opened earlier is not known."""
        if self.possible:
            self._engines.append(engine.sync_engine)
            _pids_of(engine.sync_engine)

    def _is_own(self, pid: int) -> bool:
        return any(pid in _pids_of(engine) for engine in self._engines)

    @property
    def possible(self) -> bool:
        """Whether this database sends notices at all (PostgreSQL); on SQLite the sweeps poll."""
        return not self._storage.is_sqlite

    async def wait(
        self,
        timeout: float,
        tables: tuple[str, ...],
        *,
        since: float | None = None,
        own_after: Mapping[str, float] | None = None,
    ) -> bool:
        """Wait up to `timeout` seconds for a notice of one of `tables` (or, with `since`, return at once if
        one came after that monotonic time); True if one came, or if listening started or was lost meanwhile
        (what happened then is unknown: the sweep passes again). An own notice of a table in `own_after` (see
        the module docstring) counts only that many seconds after it came. Without notices (SQLite), just
        sleeps."""
        return await self._wait(timeout, tables, since=since, own_after=own_after or {}) is not None

    async def _wait(
        self, timeout: float, tables: tuple[str, ...], *, since: float | None, own_after: Mapping[str, float]
    ) -> str | None:
        """As `wait`; what ended it: "others" (another replica's notice, or listening moved), "own" (the
        time an own notice gave has come), None (the timeout)."""
        if not self.possible:
            await asyncio.sleep(timeout)
            return None
        self._start()
        assert self._event is not None
        begun = time.monotonic() if since is None else since
        deadline = time.monotonic() + timeout
        while True:
            if self._heard_since(begun, tables, own_after):
                return "others"
            now = time.monotonic()
            own_due = self._own_due(begun, own_after)
            if own_due is not None and own_due <= now:
                return "own"
            left = min(deadline, own_due if own_due is not None else deadline) - now
            if deadline <= now:
                return None
            self._event.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(left):
                    await self._event.wait()

    async def pause(
        self,
        every: float,
        *,
        since: float,
        due: float | None,
        tables: tuple[str, ...],
        own_after: Mapping[str, float] | None = None,
    ) -> None:
        """Sleep between two passes of a sweep: the pass began at `since` (monotonic) and knows its next deadline
        is `due` seconds away (None: it knows of none). Where notices are heard, until that deadline (at least
        `every`, at most `IDLE_PASS`) or, once another replica's notice of one of `tables` came (during the
        pass too), `every` seconds after it, or `own_after[table]` seconds after this replica's own first
        notice of a table since (a table not in `own_after`: as another replica's; see the module docstring);
        elsewhere (SQLite, or while listening is not yet or no longer possible) `every`."""
        if not self.possible:
            await asyncio.sleep(every)
            return
        self._start()
        if not self.listening:
            await asyncio.sleep(every)
            return
        limit = IDLE_PASS if due is None else min(max(due, every), IDLE_PASS)
        if await self._wait(limit, tables, since=since, own_after=own_after or {}) == "others":
            await asyncio.sleep(every)

    def _heard_since(self, begun: float, tables: tuple[str, ...], own_after: Mapping[str, float]) -> bool:
        if self._lost_at > begun:
            return True
        for table in tables:
            if self._changed.get(table, 0.0) > begun:
                return True
            if table not in own_after and (stretches := self._own.get(table)) and stretches[-1][1] > begun:
                return True
        return False

    def _own_due(self, begun: float, own_after: Mapping[str, float]) -> float | None:
        """When (monotonic) the first own notice since `begun` of a table in `own_after` calls for a pass."""
        due: float | None = None
        for table, after in own_after.items():
            for first, last in self._own.get(table, ()):
                if last > begun:  # the stretch's first notice since `begun` came at `first` or after
                    at = max(first, begun) + after
                    due = at if due is None else min(due, at)
                    break
        return due

    def _start(self) -> None:
        if self._event is None:
            self._event = asyncio.Event()
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._listen(), name="work notices")

    def _heard(self, payload: str, *, own: bool = False) -> None:
        now = time.monotonic()
        if own:
            stretches = self._own.setdefault(payload, [])
            if stretches and now - stretches[-1][1] < _OWN_STRETCH:
                stretches[-1][1] = now
            else:
                stretches.append([now, now])
                while stretches[0][1] < now - _OWN_KEPT:
                    stretches.pop(0)
        else:
            self._changed[payload] = now
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

            def on_notify(_connection: Any, pid: int, _channel: str, payload: str) -> None:
                self._heard(payload, own=self._is_own(pid))

            await raw.add_listener(WORK_CHANNEL, on_notify)
            self.listening = True
            self._moved()
            while not lost.is_set() and not raw.is_closed():
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(_CHECK_CONNECTION):
                        await lost.wait()
            # the connection is gone: nothing to remove the listener from; the pool drops it

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            # bounded: a listening connection stuck in its driver's close must not hold a shutdown forever
            done, _ = await asyncio.wait({self._task}, timeout=_CLOSE_WAIT)
            if not done:
                log.warning("work notices: the listening connection did not close within %gs; left behind", _CLOSE_WAIT)
            elif not self._task.cancelled():
                self._task.exception()  # retrieved: the database was away, nothing to report on close
            self._task = None
        self.listening = False
