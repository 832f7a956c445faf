"""The one default of the persistence layer: where `Storage()` keeps its database when given no URL.

`bot.defaults` re-exports it with the bot's other defaults; it is defined here because `memory`
imports nothing from `bot`.
"""

DEFAULT_DATABASE_URL = "sqlite+aiosqlite:///data/bot.db"
"""A SQLite file under ./data (the `DATABASE_URL` setting's default)."""
