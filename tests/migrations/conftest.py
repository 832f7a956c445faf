"""The migrations' tests start from a database with no tables at all (everywhere else a test's database
is already migrated: `tests/support/databases.py`)."""

from __future__ import annotations

import pytest

from tests.support.databases import drop_postgres_database, empty_postgres_database, postgres_url


@pytest.fixture(params=["sqlite", "postgres"])
async def database_url(request, tmp_path):
    """A SQLAlchemy async URL of an empty database: SQLite in tmp_path, or a new PostgreSQL database
    dropped afterwards."""
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path}/bot.db"
        return
    name = await empty_postgres_database()
    try:
        yield postgres_url(name)
    finally:
        await drop_postgres_database(name)
