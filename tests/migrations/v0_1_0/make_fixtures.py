"""Regenerate the v0.1.0 database fixtures of `test_upgrade_from_v0_1_0.py`.

    python tests/migrations/v0_1_0/make_fixtures.py

Needs the git tag `v0.1.0` (commit a316773; `git fetch --tags` in a fresh clone), `pg_dump`, and
PostgreSQL at 127.0.0.1:5432 (user postgres). It extracts the release with `git archive v0.1.0`,
runs `create_database.py` on that code against a new SQLite file and a new PostgreSQL database, and
writes what they hold next to this script:

- `bot.sqlite`: the SQLite database file itself;
- `postgres.sql`: a plain-SQL dump (`pg_dump --inserts --no-owner --no-privileges`), without psql's
  backslash meta-commands (`\\restrict`), so any client can run it as one script.

Run it again only if the fixtures must change; the release they come from never does.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
RELEASE = "v0.1.0"
POSTGRES = {"host": "127.0.0.1", "port": 5432, "user": "postgres", "database": "postgres"}


def extract_release(into: Path) -> None:
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", RELEASE], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)


def create_with_release(source: Path, url: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(source)}
    subprocess.run([sys.executable, str(HERE / "create_database.py"), url], check=True, env=env, cwd=source)


def make_sqlite(source: Path, scratch: Path) -> None:
    path = scratch / "bot.sqlite"
    create_with_release(source, f"sqlite+aiosqlite:///{path}")
    connection = sqlite3.connect(path)
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    connection.execute("PRAGMA journal_mode=DELETE")  # one self-contained file, no -wal beside it
    connection.execute("VACUUM")
    connection.close()
    (HERE / "bot.sqlite").write_bytes(path.read_bytes())


async def admin(statement: str) -> None:
    import asyncpg

    connection = await asyncpg.connect(**POSTGRES)
    try:
        await connection.execute(statement)
    finally:
        await connection.close()


def make_postgres(source: Path) -> None:
    name = f"v0_1_0_fixture_{uuid.uuid4().hex[:8]}"
    asyncio.run(admin(f'CREATE DATABASE "{name}"'))
    try:
        create_with_release(source, f"postgresql+asyncpg://postgres@127.0.0.1:5432/{name}")
        dump = subprocess.run(
            ["pg_dump", "--inserts", "--no-owner", "--no-privileges", "-h", "127.0.0.1", "-U", "postgres", name],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    finally:
        asyncio.run(admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    sql = "".join(line for line in dump.splitlines(keepends=True) if not line.startswith("\\"))
    (HERE / "postgres.sql").write_text(f"-- A database created by {RELEASE}: see make_fixtures.py\n" + sql)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="v0.1.0-") as scratch:
        source = Path(scratch) / "source"
        source.mkdir()
        extract_release(source)
        make_sqlite(source, Path(scratch))
        make_postgres(source)
    print(f"wrote {HERE / 'bot.sqlite'} and {HERE / 'postgres.sql'}")


if __name__ == "__main__":
    main()
