"""Settings come from the environment through one object; a missing token fails at start, naming it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from bot.settings import MissingSettingError, Settings


def test_defaults_and_parsing(monkeypatch):
    for name in ("SLACK_BOT_TOKEN", "SLACK_API_URL", "DATABASE_URL", "BOT_MODEL", "BOT_ADMINS", "BOT_API_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    settings = Settings()
    assert settings.slack_api_url == "https://slack.com/api/"
    assert settings.database_url == "sqlite+aiosqlite:///data/bot.db"
    assert settings.bot_model == "openai/gpt-5-mini"
    assert settings.bot_admins == [] and settings.bot_api_token is None
    monkeypatch.setenv("BOT_ADMINS", "U1, U2,,")
    monkeypatch.setenv("SLACK_API_URL", "http://127.0.0.1:9/api")
    settings = Settings()
    assert settings.bot_admins == ["U1", "U2"] and settings.slack_api_url == "http://127.0.0.1:9/api/"


def test_require_names_each_missing_variable(monkeypatch):
    monkeypatch.delenv("SLACK_BOT_TOKEN", raising=False)
    monkeypatch.setenv("SLACK_SIGNING_SECRET", "s")
    with pytest.raises(MissingSettingError) as error:
        Settings().require("SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET")
    assert "SLACK_BOT_TOKEN" in str(error.value) and "SLACK_SIGNING_SECRET" not in str(error.value)


@pytest.mark.parametrize(
    ("command", "present", "missing"),
    [
        ("serve", {"SLACK_BOT_TOKEN": "xoxb-1"}, "SLACK_SIGNING_SECRET"),
        ("serve", {"SLACK_SIGNING_SECRET": "s"}, "SLACK_BOT_TOKEN"),
        ("socket", {"SLACK_BOT_TOKEN": "xoxb-1"}, "SLACK_APP_TOKEN"),
    ],
)
def test_missing_variable_fails_at_start(command, present, missing, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "DATABASE_URL"))}
    env.update(present, DATABASE_URL=f"sqlite+aiosqlite:///{tmp_path}/bot.db")
    result = subprocess.run(
        [sys.executable, "-m", "bot", command], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 2
    assert missing in result.stderr


def test_policy_without_a_subcommand_says_which_there_are():
    result = subprocess.run(
        [sys.executable, "-m", "bot", "policy"], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 2 and "{list,set,rules,export,apply}" in result.stderr
