"""The manifest creates an app with what the bot uses: Socket Mode, interactivity, the events and scopes."""

from __future__ import annotations

from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")

MANIFEST = Path(__file__).resolve().parents[2] / "manifest.yml"


def test_manifest_subscribes_to_what_the_bot_handles():
    manifest = yaml.safe_load(MANIFEST.read_text())
    settings = manifest["settings"]
    assert settings["socket_mode_enabled"] is True
    assert settings["interactivity"]["is_enabled"] is True
    assert {"app_mention", "message.channels", "message.groups", "message.im", "message.mpim"} <= set(
        settings["event_subscriptions"]["bot_events"]
    )
    scopes = set(manifest["oauth_config"]["scopes"]["bot"])
    assert {"app_mentions:read", "chat:write", "channels:history", "groups:history", "im:history"} <= scopes
    assert manifest["features"]["app_home"]["messages_tab_enabled"] is True
    # tool policies: admins via users.info, approver groups via usergroups.users.list, the App Home
    assert {"users:read", "usergroups:read"} <= scopes
    assert manifest["features"]["app_home"]["home_tab_enabled"] is True
    assert "app_home_opened" in settings["event_subscriptions"]["bot_events"]
    assert "request_url" in MANIFEST.read_text()  # the comment on switching to HTTP
