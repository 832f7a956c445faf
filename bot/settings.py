"""The bot's configuration, read from the environment in one place.

Nothing else in the project reads `os.environ`: the command line builds one `Settings` and passes
the values it needs down to the code it starts.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from .defaults import (
    DEFAULT_DATABASE_MAX_OVERFLOW,
    DEFAULT_DATABASE_POOL_SIZE,
    DEFAULT_DATABASE_URL,
    DEFAULT_LANGUAGE,
    DEFAULT_MAX_CONCURRENT_TURNS,
    DEFAULT_MAX_MODEL_REQUESTS,
    DEFAULT_MODEL,
    DEFAULT_QUICK_APPROVAL_SECONDS,
    DEFAULT_SLACK_API_URL,
    SHIPPED_LANGUAGES,
)
from .redaction import url_password


class SettingsError(RuntimeError):
    """A variable has a value the bot cannot use; the message names it and what it accepts."""


class MissingSettingError(RuntimeError):
    """A variable the chosen command needs is not set; the message names it and says where it comes from."""


_WHERE = {
    "SLACK_BOT_TOKEN": "the Bot User OAuth Token (xoxb-...) from the app's OAuth & Permissions page",
    "SLACK_SIGNING_SECRET": "the Signing Secret from the app's Basic Information page",
    "SLACK_APP_TOKEN": "an app-level token (xapp-...) with the connections:write scope, from Basic Information",
    "OPENAI_API_KEY": "your model provider's API key (for another OpenAI-compatible server, its key and OPENAI_BASE_URL)",
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
    slack_api_url: str = DEFAULT_SLACK_API_URL
    """SLACK_API_URL: base URL of Slack's Web API (a local stub in tests)."""
    database_url: str = DEFAULT_DATABASE_URL
    """DATABASE_URL: SQLAlchemy async URL of the bot's database."""
    openai_api_key: str | None = None
    """OPENAI_API_KEY: the model key (the openai client reads it, and OPENAI_BASE_URL, itself); the
    playground uses its offline demo model when it is unset."""
    bot_model: str = DEFAULT_MODEL
    """BOT_MODEL: `openai/<model>` of the built-in demo agent: the model's name on OpenAI's API or on the
    OpenAI-compatible server at OPENAI_BASE_URL (the only API the bot speaks)."""
    bot_admins: Annotated[list[str], NoDecode] = Field(default_factory=list)
    """BOT_ADMINS: comma-separated Slack user IDs who may edit policies (empty: workspace admins)."""
    bot_api_token: str | None = None
    """BOT_API_TOKEN: bearer token of the HTTP API; unset turns the API off."""
    bot_mcp_config: str | None = None
    """BOT_MCP_CONFIG: path of the MCP servers file (as `--mcp`); unset: no MCP servers."""
    bot_mcp_allow_http_loopback: bool = False
    """BOT_MCP_ALLOW_HTTP_LOOPBACK: also offer an MCP server's `http://` links to this machine (localhost,
    127.0.0.1, ::1) in URL-mode questions, for local development; other links than `https://` are refused."""
    bot_policies_file: str | None = None
    """BOT_POLICIES_FILE: a policies file (`python -m bot policy export`) applied at every start, all of it
    or, if any part is wrong, nothing (and the bot does not start); unset: none."""
    bot_max_concurrent_turns: int = Field(default=DEFAULT_MAX_CONCURRENT_TURNS, ge=1)
    """BOT_MAX_CONCURRENT_TURNS: agent turns one replica works on at once (the CPU); a turn waiting for
    the model or a tool holds no slot meanwhile. Other threads' messages wait; Slack's ack never does."""
    bot_max_model_requests: int = Field(default=DEFAULT_MAX_MODEL_REQUESTS, ge=1)
    """BOT_MAX_MODEL_REQUESTS: model requests one replica has in flight at once (the model's rate limit);
    a 429 from the model pauses them and the request is sent again after its Retry-After."""
    bot_database_pool_size: int = Field(default=DEFAULT_DATABASE_POOL_SIZE, ge=1)
    """BOT_DATABASE_POOL_SIZE: database connections one replica keeps open."""
    bot_database_max_overflow: int = Field(default=DEFAULT_DATABASE_MAX_OVERFLOW, ge=0)
    """BOT_DATABASE_MAX_OVERFLOW: connections one replica may open beyond the pool at a peak."""
    bot_language: str = DEFAULT_LANGUAGE
    """BOT_LANGUAGE: the language of the bot's own words for a person whose Slack locale gives none the bot
    has (en, zh-TW, zh-CN, ko, ja)."""
    bot_quick_approval_seconds: float = Field(default=DEFAULT_QUICK_APPROVAL_SECONDS, ge=0, le=3600)
    """BOT_QUICK_APPROVAL_SECONDS: an approval given within this many seconds of its request counts as quick in
    the approval analytics (the admin's App Home, `python -m bot audit --summary`)."""
    bot_log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    """BOT_LOG_LEVEL: the default of `--log-level`."""
    bot_log_format: Literal["text", "json"] = "text"
    """BOT_LOG_FORMAT: the default of `--log-format` (`json`: one object a line)."""

    xdg_data_home: str | None = None
    """XDG_DATA_HOME: where per-user data goes (the freedesktop convention): the playground keeps its
    database in `approval-bot/` there (default `~/.local/share`; macOS `~/Library/Application Support`,
    Windows `%LOCALAPPDATA%`)."""

    otel_exporter_otlp_endpoint: str | None = None
    """OTEL_EXPORTER_OTLP_ENDPOINT: where traces go over OTLP (e.g. `http://127.0.0.1:4318`); unset: no
    traces. Needs the `otel` extra; the exporter reads the other OTEL_EXPORTER_OTLP_* variables itself."""
    otel_exporter_otlp_protocol: Literal["http/protobuf", "grpc"] = "http/protobuf"
    """OTEL_EXPORTER_OTLP_PROTOCOL: `http/protobuf` (port 4318) or `grpc` (port 4317)."""
    otel_service_name: str = "approval-bot"
    """OTEL_SERVICE_NAME: the `service.name` of the traces."""

    @field_validator("bot_log_level", mode="before")
    @classmethod
    def _upper(cls, value: object) -> object:
        return value.upper() if isinstance(value, str) else value

    bot_recovery_interval: float = Field(default=10.0, gt=0)
    """BOT_RECOVERY_INTERVAL: seconds between two recovery passes (each replica runs one at start, then
    at this interval)."""
    bot_stale_after: float = Field(default=30.0, gt=0)
    """BOT_STALE_AFTER: seconds after which work another process took on and did not finish (a run, the
    post of an approval message) is taken over by the recovery."""
    bot_model_timeout: float = Field(default=60.0, gt=0)
    """BOT_MODEL_TIMEOUT: seconds one model call may take, retries included, unless the agent sets its own."""
    bot_shutdown_grace: float = Field(default=10.0, ge=0)
    """BOT_SHUTDOWN_GRACE: seconds `serve`/`socket` wait on SIGTERM for running tools before they exit."""

    @field_validator("bot_model")
    @classmethod
    def _a_model_the_bot_can_use(cls, value: str) -> str:
        provider, slash, name = value.partition("/")
        if provider != "openai" or not slash or not name.strip():
            shown = value if len(value) <= 80 else value[:77] + "..."
            raise ValueError(
                f"{shown!r} is not a model the bot can use: it speaks the OpenAI API, so write openai/<model> "
                "(e.g. openai/gpt-5-mini; for another OpenAI-compatible server, its model name after openai/ "
                "and its URL in OPENAI_BASE_URL)"
            )
        return value

    @field_validator("bot_language")
    @classmethod
    def _a_shipped_language(cls, value: str) -> str:
        for language in SHIPPED_LANGUAGES:
            if language.lower() == value.strip().replace("_", "-").lower():
                return language
        shown = ", ".join(SHIPPED_LANGUAGES)
        raise ValueError(f"{value[:40]!r} is not a language the bot has: write one of {shown}")

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

    @property
    def playground_database_url(self) -> str:
        """The database `python -m bot dev` uses: DATABASE_URL when it is set, else the playground's own
        (`playground_database_file`); the admin commands reach it with `--playground`."""
        if "database_url" in self.model_fields_set:
            return self.database_url
        return f"sqlite+aiosqlite:///{self.playground_database_file}"

    @property
    def playground_database_file(self) -> Path:
        """The playground's own database: one per user, in the user's data folder, so `dev` and every
        `--playground` command find the same file whichever folder they run from."""
        return _user_data_folder(self.xdg_data_home) / "approval-bot" / "playground.db"

    def secrets(self) -> list[str]:
        """The values no message, audit line or model request may show (see `bot.redaction`): the tokens,
        keys and the database's password. Empty ones are left out."""
        values = [self.slack_bot_token, self.slack_signing_secret, self.slack_app_token, self.openai_api_key]
        values += [self.bot_api_token, url_password(self.database_url)]
        return [value for value in values if value]

    def require(self, *names: str) -> None:
        """Fail with a message naming each missing variable among `names` (environment variable names)."""
        missing = [name for name in names if not getattr(self, name.lower())]
        if missing:
            lines = [f"{name} is not set: set it to {_WHERE.get(name, 'a value')}." for name in missing]
            raise MissingSettingError("\n".join(lines))


def _user_data_folder(xdg_data_home: str | None) -> Path:
    """Where this system keeps a user's application data (the XDG base directory on Linux)."""
    if xdg_data_home and Path(xdg_data_home).is_absolute():  # the spec: a relative value is ignored
        return Path(xdg_data_home)
    if sys.platform == "win32" and os.environ.get("LOCALAPPDATA"):
        return Path(os.environ["LOCALAPPDATA"])
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support"
    return Path.home() / ".local" / "share"


def environment() -> Mapping[str, str]:
    """The environment, for what the settings cannot name in advance: `${VAR}` in the MCP servers file."""
    return os.environ


def load_settings() -> Settings:
    """The settings from the environment; a value that does not parse is a `SettingsError` naming it."""
    try:
        return Settings()
    except ValidationError as exc:
        problems = [
            f"{'.'.join(str(p) for p in e['loc']).upper()}: {e['msg'].removeprefix('Value error, ')}"
            for e in exc.errors()
        ]
        raise SettingsError("; ".join(problems)) from None


def without_password(url: str) -> str:
    """A database URL as it may be shown (on stderr, in an error): its password, if any, as `***`. Works
    on a URL that does not parse too, since that is when it is shown in an error."""
    scheme, sep, rest = url.partition("://")
    credentials, at, host = rest.rpartition("@")
    if not at or ":" not in credentials:
        return url
    return f"{scheme}{sep}{credentials.split(':')[0]}:***@{host}"
