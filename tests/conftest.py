"""Fixtures every test directory uses: a scripted model on loopback, a migrated database with no rows
on SQLite and on PostgreSQL, the emulated Slack workspace, and the effects log the crash agent's tools write.

Helpers (functions, constants) live in `tests/support/`; a directory's own fixtures in its
`conftest.py`. A test module never imports another test module (`tests/test_layering.py` checks).
"""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from bot.slack_emulator import SlackEmulator
from tests.support.clock import MovableClock
from tests.support.databases import PostgresPool, SqliteTemplate, postgres_url
from tests.support.pg_cluster import postgres_cluster  # noqa: F401 - a fixture: a PostgreSQL of the test's own
from tests.support.scripted_model import ScriptedModel
from tests.support.slack import slack_workspace


def pytest_collection_finish(session):
    """Leave what the collection imported (the bot, its libraries, the test modules) out of the garbage
    collector's full collections, as `python -m bot serve` does once started (`bot.slack.server`): a full
    collection holds every thread while it walks them, and under a loaded CI that took an ack's record past
    `RECORD_WITHIN`."""
    gc.collect()
    gc.freeze()


@pytest.fixture(autouse=True)
def user_data_folder(tmp_path, monkeypatch):
    """The test's own per-user data folder (XDG_DATA_HOME, where the playground keeps its database; processes
    the test starts inherit it): no test reads or writes the real user's, nor another test's."""
    folder = tmp_path / "user-data"
    monkeypatch.setenv("XDG_DATA_HOME", str(folder))
    return folder


@pytest.fixture
def model(monkeypatch):
    """A started ScriptedModel; OPENAI_BASE_URL/OPENAI_API_KEY point at it (subprocesses inherit)."""
    with ScriptedModel() as scripted:
        monkeypatch.setenv("OPENAI_BASE_URL", scripted.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        yield scripted


@pytest.fixture(scope="session")
def postgres_pool():
    """This worker's migrated PostgreSQL databases, emptied between tests, dropped at the end."""
    pool = PostgresPool()
    yield pool
    pool.drop_all()


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory):
    """This worker's migrated SQLite file, copied for each test."""
    return SqliteTemplate(tmp_path_factory.mktemp("template"))


STORAGE_DIRECTORIES = frozenset({"cli", "demo", "mcp", "memory", "runtime", "storage"})
"""Where storage behaviour is what the tests test (races, recovery, LISTEN/NOTIFY, the conformance of the
stores, real processes on one database): their `database_url` tests run on SQLite and on PostgreSQL.
Elsewhere (the Slack adapter, the playground) a test runs on SQLite only, unless its module says
`pytestmark = pytest.mark.both_databases` (a store of the adapter's own, a race between replicas, a
column limit that only PostgreSQL enforces)."""


def pytest_generate_tests(metafunc):
    if "database_url" not in metafunc.fixturenames:
        return
    if any("database_url" in _argnames(m.args[0]) for m in metafunc.definition.iter_markers("parametrize")):
        return  # the test names its database itself
    if Path(metafunc.definition.path).parent.name == "migrations":
        return  # tests/migrations has a database_url of its own
    metafunc.parametrize("database_url", databases_for(metafunc.definition), indirect=True)


def _argnames(names) -> list[str]:
    return [name.strip() for name in names.split(",")] if isinstance(names, str) else list(names)


def databases_for(item) -> list[str]:
    relative = Path(item.path).relative_to(Path(__file__).parent)
    if relative.parts[0] in STORAGE_DIRECTORIES or item.get_closest_marker("both_databases"):
        return ["sqlite", "postgres"]
    return ["sqlite"]


@pytest.fixture
async def database_url(request, tmp_path, postgres_pool, sqlite_template):
    """A SQLAlchemy async URL of a database with every package's tables and no rows: SQLite in
    tmp_path, or a PostgreSQL database of this worker's pool (`tests/support/databases.py`)."""
    if request.param == "sqlite":
        yield await sqlite_template.copy_to(tmp_path / "bot.db")
        return
    name = await postgres_pool.take()
    try:
        yield postgres_url(name)
    finally:
        await postgres_pool.give_back(name)


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
