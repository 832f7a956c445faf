"""What the stores (runs, policies, the audit log) need of `Storage`: a transaction, the dialect, the clock.

A protocol, so the stores do not import the `Storage` that builds them (no import cycle).
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Protocol

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from .clock import Clock
from .dialects import Dialect


class Database(Protocol):
    dialect: Dialect
    """What differs between SQLite and PostgreSQL: ask it, never branch on the database."""
    clock: Clock
    """Where "now" is read (expiry, leases, grants): a test passes one it moves forward."""

    def session(self) -> AbstractAsyncContextManager[AsyncSession]:
        """A session inside one transaction, committed on success."""
        ...

    def transaction(self) -> AbstractAsyncContextManager[AsyncConnection]:
        """One write transaction on a plain connection, committed on success."""
        ...

    def statement(self, *, idempotent: bool = False) -> AbstractAsyncContextManager[AsyncConnection]:
        """A connection for one write statement that commits by itself (autocommit on PostgreSQL: one round
        trip, no BEGIN ... COMMIT); statements merged by `Dialect.together` count as one."""
        ...

    def read(self) -> AbstractAsyncContextManager[AsyncConnection]:
        """A plain connection for reads alone, outside any write transaction."""
        ...

    def read_session(self) -> AbstractAsyncContextManager[AsyncSession]:
        """A session for reads alone, outside any write transaction."""
        ...
