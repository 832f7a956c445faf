"""`python -m memory upgrade [URL]`: apply the schema migrations to DATABASE_URL (or URL) and exit."""

import argparse
import asyncio
import os

from ._storage import Storage


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m memory")
    parser.add_argument("command", choices=["upgrade"])
    parser.add_argument("url", nargs="?", default=os.environ.get("DATABASE_URL", "sqlite+aiosqlite:///data/bot.db"))
    args = parser.parse_args()

    async def upgrade() -> None:
        storage = Storage(args.url)
        await storage.migrate()
        await storage.close()
        print(f"schema up to date: {storage}")

    asyncio.run(upgrade())


if __name__ == "__main__":
    main()
