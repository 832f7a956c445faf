"""The manifest creates an app with what the bot uses: Socket Mode, interactivity, the events and scopes."""

from __future__ import annotations

import copy
import json
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


SCHEMA = Path(__file__).resolve().parent / "slack_manifest_schema" / "manifest.schema.1.0.0.json"
"""Slack's published manifest schema (slackapi/manifest-schema, MIT), vendored: see SOURCE.md beside it."""


def schema_errors(manifest: dict) -> list[str]:
    import jsonschema

    validator = jsonschema.Draft7Validator(json.loads(SCHEMA.read_text()))
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(manifest)]


def test_the_manifest_validates_against_slacks_published_schema():
    assert schema_errors(yaml.safe_load(MANIFEST.read_text())) == []


def test_the_schema_refuses_what_slack_refuses_in_the_agent_view():
    """The check can fail: the agent view of the old assistant_view, and a fifth suggested prompt, are refused."""
    manifest = yaml.safe_load(MANIFEST.read_text())
    old_style = copy.deepcopy(manifest)
    old_style["features"]["agent_view"]["assistant_description"] = "Un assistant qui demande avant d'agir."
    assert any("assistant_description" in error for error in schema_errors(old_style))
    too_many = copy.deepcopy(manifest)
    too_many["features"]["agent_view"]["suggested_prompts"] = [{"title": "東京", "message": "天気は？"}] * 5
    assert any("suggested_prompts" in error for error in schema_errors(too_many))
