"""Bolt listeners, one folder per Slack surface; `register_listeners` wires them all explicitly."""

from slack_bolt.async_app import AsyncApp

from . import actions, events, views


def register_listeners(app: AsyncApp) -> None:
    events.register(app)
    actions.register(app)
    views.register(app)
