"""Every default value of the bot, in one place; settings, the runtime and the adapters import them.

The database URL is `Storage`'s own default, defined in `memory.defaults` (which cannot import `bot`)
and re-exported here.
"""

from memory.defaults import DEFAULT_DATABASE_URL

DEFAULT_MODEL = "openai/gpt-5-mini"
"""`provider/model` of an `Agent` built without `model=`, and of the demo agent (`BOT_MODEL`)."""

DEFAULT_SLACK_API_URL = "https://slack.com/api/"
"""Base URL of Slack's Web API (`SLACK_API_URL`)."""

PLAYGROUND_DATABASE_URL = "sqlite+aiosqlite:///data/playground.db"
"""The playground's own database, used when `DATABASE_URL` is not set."""

__all__ = ["DEFAULT_DATABASE_URL", "DEFAULT_MODEL", "DEFAULT_SLACK_API_URL", "PLAYGROUND_DATABASE_URL"]
