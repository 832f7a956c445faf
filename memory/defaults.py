"""The one default of the persistence layer: where `Storage()` keeps its database when given no URL.

`bot.defaults` re-exports it with the bot's other defaults; it is defined here because `memory`
imports nothing from `bot`.
"""

DEFAULT_DATABASE_URL = "sqlite+aiosqlite:///data/bot.db"
"""A SQLite file under ./data (the `DATABASE_URL` setting's default)."""

SUSPENDED_RUNS_COUNTED_AHEAD = 200
"""How far past the end of a page `list_suspended_runs` counts the waiting runs for its `total`. An exact
count of 100,000 waiting runs costs a probe of each; this keeps every page's cost flat. Past it, `total`
is a lower bound (the runs counted) and `total_exact` is False."""
