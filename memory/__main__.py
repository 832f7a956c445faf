"""`python -m memory upgrade URL`: apply the schema migrations to the database at URL and exit.

The bot applies them itself on start; this is for upgrading a database ahead of a deploy.
"""

import argparse
import asyncio

from ._storage import Storage


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m memory")
    parser.add_argument("command", choices=["upgrade"])
    parser.add_argument("url", help="SQLAlchemy async URL, e.g. sqlite+aiosqlite:///data/bot.db")
    args = parser.parse_args()

    async def upgrade() -> None:
        storage = Storage(args.url)
        await storage.migrate()
        await storage.close()
        print(f"schema up to date: {storage}")

    asyncio.run(upgrade())


if __name__ == "__main__":
    main()
