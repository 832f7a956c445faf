"""The database away for a moment (a restart, a failover, a dropped connection) is not a failure.

Three places deal with it:

- opening a connection is tried again, with backoff, for up to `Storage.reconnect_for` seconds, while the
  server refuses or says it is starting up (`connected`);
- a transaction whose connection dropped before its COMMIT stored nothing: the whole store method is tried
  again from its start, once the database answers (`retried_while_away`, for stores whose methods' work is
  reads and at most one transaction, so a try that failed left nothing behind);
- a COMMIT whose connection dropped has an unknown outcome: `CommitOutcomeUnknownError`, which only the
  writer can settle by reading what it wrote.

A disconnect also makes SQLAlchemy drop every connection the pool held from before it (they all point at
the server that went away), so the next checkout opens a new one; no ping before each checkout is needed.
"""

from __future__ import annotations

import asyncio
import errno
import functools
import inspect
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from sqlalchemy.exc import DBAPIError

from .exceptions import AgentError, CommitOutcomeUnknownError, DatabaseAwayError

log = logging.getLogger("memory")

_AWAY_STATES = ("08", "57P01", "57P02", "57P03")
"""SQLSTATEs of a connection that failed or a server shutting down or starting up (PostgreSQL's class 08,
admin_shutdown, crash_shutdown, cannot_connect_now)."""
_NETWORK_ERRNOS = frozenset(
    {errno.ECONNREFUSED, errno.ECONNRESET, errno.ECONNABORTED, errno.EPIPE, errno.ETIMEDOUT, errno.EHOSTUNREACH,
     errno.ENETUNREACH, errno.ENETDOWN, errno.EADDRNOTAVAIL}
)  # fmt: skip
_BUSY_WITH_AN_ERROR = "another operation (2) is in progress"
"""asyncpg's protocol still reading an error the server sent on its own (state 2, consuming an error: the
"terminating connection" of a server shutting down) when the next statement or COMMIT was sent."""
_CLOSED_BEFORE_SENDING = "connection is closed"
"""What asyncpg raises, before sending anything, for a statement on a connection it already knows is closed
(`Connection._check_open`); a connection lost while a statement runs raises `ConnectionDoesNotExistError`."""
_FIRST_PAUSE, _LONGEST_PAUSE = 0.05, 1.0

T = TypeVar("T")
S = TypeVar("S")


def database_away(exc: BaseException) -> bool:
    """Whether `exc` says the database could not be reached (as opposed to a statement it refused)."""
    if isinstance(exc, AgentError):  # the runtime's own (some are `PermissionError`s, an `OSError`)
        return isinstance(exc, DatabaseAwayError)
    if isinstance(exc, DBAPIError) and exc.connection_invalidated:
        return True
    cause: BaseException | None = exc
    for _ in range(8):  # the driver's own error is a few causes down
        if cause is None:
            break
        if isinstance(cause, (ConnectionError, TimeoutError)) or type(cause).__name__ == "ConnectionDoesNotExistError":
            return True
        if isinstance(cause, OSError) and cause.errno in _NETWORK_ERRNOS:
            return True
        state = getattr(cause, "sqlstate", None)
        if isinstance(state, str) and state.startswith(_AWAY_STATES):
            return True
        if type(cause).__name__ == "InternalClientError" and _BUSY_WITH_AN_ERROR in str(cause):
            return True
        cause = cause.__cause__ or cause.__context__
    return False


def never_sent(exc: BaseException) -> bool:
    """Whether `exc` says the statement never left this process: the driver found its connection already
    closed (a pooled connection the server ended in a restart), so nothing of it can have been stored."""
    cause: BaseException | None = exc
    for _ in range(8):
        if cause is None:
            return False
        if type(cause).__name__ == "InterfaceError" and str(cause) == _CLOSED_BEFORE_SENDING:
            return True
        cause = cause.__cause__ or cause.__context__
    return False


def away_error(exc: BaseException, *, committing: bool) -> DatabaseAwayError:
    """The runtime's error for a database that went away (`exc`, the driver's), while committing or before."""
    if committing:
        return CommitOutcomeUnknownError(
            f"the connection dropped while committing; it may or may not be stored ({exc})"
        )
    return DatabaseAwayError(f"the database could not be reached ({type(exc).__name__}: {exc})")


async def connected(open_connection: Callable[[], Awaitable[T]], *, reconnect_for: float) -> T:
    """`open_connection()`, tried again with backoff while the database is away, for up to `reconnect_for` s."""
    deadline = time.monotonic() + reconnect_for
    pause = _FIRST_PAUSE
    while True:
        try:
            return await open_connection()
        except Exception as exc:
            if not database_away(exc):
                raise
            if time.monotonic() + pause > deadline:
                raise away_error(exc, committing=False) from exc
            log.info("the database is away (%s); connecting again in %.2f s", type(exc).__name__, pause)
        await asyncio.sleep(pause)
        pause = min(pause * 2, _LONGEST_PAUSE)


def retried_while_away(store: type[S]) -> type[S]:
    """`store` (a class with `_storage` or `storage`) with each of its coroutine methods tried again from its
    start when the database went away before anything of it was committed, for up to
    `Storage.reconnect_for` seconds.

    For a store whose every method's work is reads and at most one transaction of its own (work inside a
    caller's transaction, given a connection, sees the driver's error and is not tried again here): a
    try that failed then stored nothing, so trying again is the same as trying once. A commit of unknown
    outcome is not tried again (`CommitOutcomeUnknownError`).
    """
    for name, value in list(vars(store).items()):
        if inspect.isfunction(value) and inspect.iscoroutinefunction(value) and not name.startswith("__"):
            setattr(store, name, _retried(value))
    return store


def _retried(method: Callable[..., Awaitable[T]]) -> Callable[..., Awaitable[T]]:
    @functools.wraps(method)
    async def again(self: Any, *args: Any, **kwargs: Any) -> T:
        try:
            return await method(self, *args, **kwargs)
        except CommitOutcomeUnknownError:
            raise
        except DatabaseAwayError:
            pass  # the first try failed before its commit: from here on, with a deadline
        storage = getattr(self, "_storage", None) or self.storage
        deadline = time.monotonic() + storage.reconnect_for
        pause = _FIRST_PAUSE
        while True:
            await asyncio.sleep(pause)
            try:
                return await method(self, *args, **kwargs)
            except CommitOutcomeUnknownError:
                raise
            except DatabaseAwayError as exc:
                pause = min(pause * 2, _LONGEST_PAUSE)
                if time.monotonic() + pause > deadline:
                    raise
                log.info("%s: the database is away (%s); trying again in %.2f s", method.__qualname__, exc, pause)

    return again
