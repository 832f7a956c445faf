"""The bot's configuration, read from the environment in one place.

Nothing else in the project reads `os.environ`: the command line builds one `Settings` and passes
the values it needs down to the code it starts.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict


class MissingSettingError(RuntimeError):
    """A variable the chosen command needs is not set; the message names it and says where it comes from."""


_WHERE = {
    "SLACK_BOT_TOKEN": "the Bot User OAuth Token (xoxb-...) from the app's OAuth & Permissions page",
    "SLACK_SIGNING_SECRET": "the Signing Secret from the app's Basic Information page",
    "SLACK_APP_TOKEN": "an app-level token (xapp-...) with the connections:write scope, from Basic Information",
}


class Settings(BaseSettings):
    """Everything the bot reads from the environment (see the README's table)."""

    model_config = SettingsConfigDict(env_prefix="", case_sensitive=False, extra="ignore")

    slack_bot_token: str | None = None
    """SLACK_BOT_TOKEN: the bot token; required for `serve` and `socket`."""
    slack_signing_secret: str | None = None
    """SLACK_SIGNING_SECRET: verifies that HTTP requests come from Slack; required for `serve`."""
    slack_app_token: str | None = None
    """SLACK_APP_TOKEN: the app-level token Socket Mode connects with; required for `socket`."""
    slack_api_url: str = "https://slack.com/api/"
    """SLACK_API_URL: base URL of Slack's Web API (a local stub in tests)."""
    database_url: str = "sqlite+aiosqlite:///data/bot.db"
    """DATABASE_URL: SQLAlchemy async URL of the bot's database."""
    openai_api_key: str | None = None
    """OPENAI_API_KEY: the model key (the openai client reads it, and OPENAI_BASE_URL, itself); the
    playground uses its offline demo model when it is unset."""
    bot_model: str = "openai/gpt-5-mini"
    """BOT_MODEL: `provider/model` of the built-in demo agent."""
    bot_admins: Annotated[list[str], NoDecode] = Field(default_factory=list)
    """BOT_ADMINS: comma-separated Slack user IDs who may edit policies (empty: workspace admins)."""
    bot_api_token: str | None = None
    """BOT_API_TOKEN: bearer token of the HTTP API; unset turns the API off."""

    @field_validator("bot_admins", mode="before")
    @classmethod
    def _split_admins(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("slack_api_url")
    @classmethod
    def _trailing_slash(cls, value: str) -> str:
        return value if value.endswith("/") else value + "/"

    def require(self, *names: str) -> None:
        """Fail with a message naming each missing variable among `names` (environment variable names)."""
        missing = [name for name in names if not getattr(self, name.lower())]
        if missing:
            lines = [f"{name} is not set: set it to {_WHERE.get(name, 'a value')}." for name in missing]
            raise MissingSettingError("\n".join(lines))
