"""The manifest creates an app with what the bot uses: Socket Mode, interactivity, the events and scopes."""

from __future__ import annotations

import json
import os
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


def test_the_manifest_uses_the_agent_messaging_experience():
    manifest = yaml.safe_load(MANIFEST.read_text())
    features = manifest["features"]
    assert "assistant_view" not in features  # new apps can no longer use it
    agent_view = features["agent_view"]
    assert agent_view["agent_description"] and len(agent_view["agent_description"]) <= 300
    assert 1 <= len(agent_view["suggested_prompts"]) <= 4
    assert all(set(prompt) == {"title", "message"} for prompt in agent_view["suggested_prompts"])
    # the loading status and suggested prompts need assistant:write; a DM opened is app_home_opened
    assert "assistant:write" in manifest["oauth_config"]["scopes"]["bot"]
    assert {"app_home_opened", "message.im"} <= set(manifest["settings"]["event_subscriptions"]["bot_events"])


SCHEMA_PLACES = (os.environ.get("SLACK_MANIFEST_SCHEMA", ""),)


def test_the_manifest_validates_against_slacks_published_schema():
    """Slack's schema (github.com/slackapi/manifest-schema, schemas/manifest.schema.1.0.0.json) is not
    vendored here: name a copy in SLACK_MANIFEST_SCHEMA to run this check."""
    jsonschema = pytest.importorskip("jsonschema")
    place = next((Path(p) for p in SCHEMA_PLACES if p and Path(p).is_file()), None)
    if place is None:
        pytest.skip("no copy of Slack's manifest schema: set SLACK_MANIFEST_SCHEMA to its path")
    schema = json.loads(place.read_text())
    jsonschema.validate(yaml.safe_load(MANIFEST.read_text()), schema)
