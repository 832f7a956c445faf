"""What a failing tool or preview said is shown without secrets (`bot.redaction`, issue 38 part 5): the
secrets the settings know, credentials in URLs and common token shapes are masked; the rest of the text,
in any script, is kept as written."""

from __future__ import annotations

import pytest

from bot.redaction import Redactor, url_password
from bot.settings import Settings


@pytest.mark.parametrize(
    ("said", "shown"),
    [
        (
            "could not reach db at postgres://admin:s3cr3t-密码@db/prod",
            "could not reach db at postgres://admin:***@db/prod",
        ),
        ("postgresql+asyncpg://u:p@ss@db:5432/x 東京", "postgresql+asyncpg://u:***@db:5432/x 東京"),
        (
            "https://user@example.com/a@b and http://host:8080/path",
            "https://user@example.com/a@b and http://host:8080/path",
        ),
        ("Slack said xoxb-1111-2222-abc and xapp-1-A01-xyz", "Slack said xoxb-*** and xapp-***"),
        ("key sk-proj-AbCdEf123456 used; risk-assessment kept", "key sk-*** used; risk-assessment kept"),
        ("Authorization: Bearer eyJhbGciOi.x.y", "Authorization: Bearer ***"),
        ('?password=hunter22&user=김 {"api_key": "zz-top"}', '?password=***&user=김 {"api_key": "***"}'),
        ("서울 에서 실패했습니다: 시간 초과", "서울 에서 실패했습니다: 시간 초과"),
    ],
)
def test_token_shapes_and_url_credentials_are_masked(said, shown):
    assert Redactor()(said) == shown


def test_the_secrets_it_is_told_of_are_masked_wherever_they_occur():
    redact = Redactor(["令牌-Z9z9z9q", "p%40ss-word", None, "", "ab"])
    assert redact("the token 令牌-Z9z9z9q leaked; p@ss-word too; ab stays") == "the token *** leaked; *** too; ab stays"


def test_the_settings_name_their_secrets():
    settings = Settings(
        slack_bot_token="xoxb-1-2-3",
        slack_signing_secret="signing-秘密",
        slack_app_token="xapp-9",
        openai_api_key="sk-openai-key",
        bot_api_token="api-token-42",
        database_url="postgresql+asyncpg://bot:db-p%40ss@db/bot",
    )
    assert settings.secrets() == [
        "xoxb-1-2-3",
        "signing-秘密",
        "xapp-9",
        "sk-openai-key",
        "api-token-42",
        "db-p%40ss",
    ]
    assert Redactor(settings.secrets())("signing-秘密 and db-p@ss") == "*** and ***"
    unset = dict.fromkeys(
        ["slack_bot_token", "slack_signing_secret", "slack_app_token", "openai_api_key", "bot_api_token"]
    )
    assert Settings(**unset, database_url="sqlite+aiosqlite:///data/bot.db").secrets() == []
    assert url_password("postgresql://bot@db/x") is None
