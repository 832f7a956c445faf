"""`python -m memory upgrade URL [PACKAGE ...]`: bring a database's tables up to date and exit;
`python -m memory revision PACKAGE -m MESSAGE`: start a new migration of a package.

The bot migrates what it uses when it starts; `upgrade` is for doing it ahead of a deploy.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib

from ._storage import Storage
from .schema import Schema

UPGRADE_HELP = """Apply the runtime's migrations (threads, runs, messages, tool calls, policies, audit) to the database
at URL, then those of each PACKAGE named. The bot's packages: bot.slack (the Slack adapter's tables),
bot.demo (the demo agent's tables) and bot.playground (the playground's workspace). Safe while
replicas run: one migrates, the others wait."""


def schema_of(package: str) -> Schema:
    """The `SCHEMA` a package declares in its `migrations` module (`memory` is the runtime)."""
    try:
        module = importlib.import_module(f"{package}.migrations")
    except ImportError as exc:
        raise SystemExit(f"error: {package!r} has no migrations module ({package}.migrations): {exc}") from exc
    schema = getattr(module, "SCHEMA", None)
    if not isinstance(schema, Schema):
        raise SystemExit(f"error: {package}.migrations defines no SCHEMA")
    return schema


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m memory", description="Database migrations, per package.")
    commands = parser.add_subparsers(dest="command", required=True)
    upgrade = commands.add_parser("upgrade", help="bring a database's tables up to date", description=UPGRADE_HELP)
    upgrade.add_argument("url", help="SQLAlchemy async URL, e.g. sqlite+aiosqlite:///data/bot.db")
    upgrade.add_argument("packages", nargs="*", metavar="PACKAGE", help="also migrate these packages, e.g. bot.slack")
    revision = commands.add_parser("revision", help="write a new, empty migration of a package after its head")
    revision.add_argument("package", help="the package that owns the tables: memory, bot.slack, bot.demo, ...")
    revision.add_argument("-m", "--message", required=True, help="what the migration changes")
    args = parser.parse_args()

    if args.command == "revision":
        print(schema_of(args.package).new_revision(args.message))
        return
    schemas = [schema_of(package) for package in args.packages]

    async def upgrade_all() -> None:
        storage = Storage(args.url)
        try:
            await storage.migrate(*schemas)
        finally:
            await storage.close()
        names = ", ".join(["runtime", *(schema.name for schema in schemas)])
        print(f"schema up to date ({names}): {storage}")

    asyncio.run(upgrade_all())


if __name__ == "__main__":
    main()
