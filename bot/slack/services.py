"""What the Slack listeners work with, built once per app and handed to them through Bolt's context.

The listeners never reach for module globals: a test builds an app with its own agent, storage and
Slack URL, and two apps in one process do not share anything.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bot.defaults import DEFAULT_QUICK_APPROVAL_SECONDS

from .directory import Directory
from .stores import SlackStores

if TYPE_CHECKING:
    from bot.agent import Agent

    from .intake import EventIntake
    from .reader_language import ReaderLanguages
    from .stall_watch import StallWatch
    from .turn_queue import TurnQueue

SERVICES_KEY = "services"
"""The key under which listeners find `SlackServices` in Bolt's `context`."""


@dataclass(kw_only=True)
class SlackServices:
    """The agent, the adapter's storage, and the rules the listeners apply."""

    agent: Agent
    stores: SlackStores
    """The adapter's tables, one store each."""
    directory: Directory | None = None
    """Admins and user groups, looked up in Slack (see `directory`)."""
    home: Any = None
    """The App Home publisher (`home.HomePublisher`), told when something a Home shows changes."""
    streaming: bool = True
    quick_approval_seconds: float = DEFAULT_QUICK_APPROVAL_SECONDS
    """An approval within this many seconds of its request is quick in the analytics (`BOT_QUICK_APPROVAL_SECONDS`)."""
    """Stream replies with chat.startStream; False posts and updates instead."""
    logger: logging.Logger = field(default_factory=lambda: logging.getLogger("bot.slack"))
    turns: TurnQueue = field(init=False)
    """Takes the turns of queued messages, one at a time per thread (set by `create_slack_app`)."""
    stalls: StallWatch | None = None
    """Tells whether this process stalled past a lease (set by `create_slack_app`)."""
    repost_after: float = 30.0
    """Seconds after which a recovery pass (any replica's, `recovery.py`) may take over a post someone claimed:
    the app's `stale_after`, or a shorter `repost_after` this process's own recovery runs with."""
    intake: EventIntake | None = None
    """Over HTTP, acknowledges event deliveries before Bolt dispatches them (set by `create_slack_app`)."""
    languages: ReaderLanguages = field(init=False)
    """The language of what a person sees alone, and of a conversation (set by `create_slack_app`)."""


def services_of(context: Any) -> SlackServices:
    return context[SERVICES_KEY]


_OF_APP = "_approval_bot_services"
"""The attribute of a Bolt app that holds its services, so they go when the app goes. (A `WeakKeyDictionary`
of them kept every app for good: its services hold the app, whose intake dispatches through it.)"""


def services_of_app(app: Any) -> SlackServices:
    """The services of a Bolt app built by `create_slack_app` (for front ends served beside it: the HTTP API)."""
    return getattr(app, _OF_APP)


def home_changed(services: SlackServices) -> None:
    """Something the App Home shows changed (an approval posted or settled, a policy changed)."""
    if services.home is not None:
        services.home.changed()


def remember_services(app: Any, services: SlackServices) -> None:
    setattr(app, _OF_APP, services)


def attach_services(services: SlackServices) -> Callable[..., Awaitable[None]]:
    """A global middleware that puts `services` into every request's context."""

    async def attach_slack_services(context, next):
        context[SERVICES_KEY] = services
        await next()

    return attach_slack_services
