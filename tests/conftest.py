"""Fixtures every test directory uses: a scripted model on loopback, a fresh database on SQLite and on
PostgreSQL, the emulated Slack workspace, and the effects log the crash agent's tools write.

Helpers (functions, constants) live in `tests/support/`; a directory's own fixtures in its
`conftest.py`. A test module never imports another test module (`tests/test_layering.py` checks).
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from bot.slack_emulator import SlackEmulator
from tests.support.clock import MovableClock
from tests.support.scripted_model import ScriptedModel
from tests.support.slack import slack_workspace

POSTGRES_ADMIN = {"host": "127.0.0.1", "port": 5432, "user": "postgres", "database": "postgres"}


@pytest.fixture
def model(monkeypatch):
    """A started ScriptedModel; OPENAI_BASE_URL/OPENAI_API_KEY point at it (subprocesses inherit)."""
    with ScriptedModel() as scripted:
        monkeypatch.setenv("OPENAI_BASE_URL", scripted.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        yield scripted


async def _create_postgres_database() -> str:
    import asyncpg

    name = f"bot_test_{uuid.uuid4().hex}"
    connection = await asyncpg.connect(**POSTGRES_ADMIN)
    try:
        await connection.execute(f'CREATE DATABASE "{name}"')
    finally:
        await connection.close()
    return name


async def _drop_postgres_database(name: str) -> None:
    import asyncpg

    connection = await asyncpg.connect(**POSTGRES_ADMIN)
    try:
        await connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await connection.close()


@pytest.fixture(params=["sqlite", "postgres"])
async def database_url(request, tmp_path):
    """A SQLAlchemy async URL of an empty database: SQLite in tmp_path, or a fresh PostgreSQL
    database dropped afterwards."""
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path}/bot.db"
        return
    name = await _create_postgres_database()
    try:
        yield f"postgresql+asyncpg://postgres@127.0.0.1:5432/{name}"
    finally:
        await _drop_postgres_database(name)


@pytest.fixture
def clock():
    """The clock of the test's `storage` (a `MovableClock`): `clock.advance(2)` instead of sleeping 2 s."""
    return MovableClock()


@pytest.fixture
async def storage(database_url, clock):
    """`memory.Storage` on `database_url`, on the test's `clock`, closed afterwards."""
    from memory import Storage

    store = Storage(database_url, clock=clock)
    try:
        yield store
    finally:
        await store.close()


@pytest.fixture
async def slack():
    """The emulated Slack Web API on loopback, with the tests' workspace (`tests/support/slack.py`)."""
    async with SlackEmulator(slack_workspace()) as emulator:
        yield emulator


@pytest.fixture
def effects(tmp_path, monkeypatch) -> Path:
    """The log the crash agent's tools write (`EFFECTS`), in this process and in the processes it starts."""
    path = tmp_path / "effects.log"
    monkeypatch.setenv("EFFECTS", str(path))
    return path
