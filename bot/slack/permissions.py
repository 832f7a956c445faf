"""How Slack words the runtime's rule of who may act (`bot.agent`'s `_authorize`): people as mentions,
user groups as group mentions, tools as code spans. The rule itself lives in the runtime, which asks
this adapter's `Directory` about people, groups and conversations; nothing here decides."""

from __future__ import annotations

from bot.agent import Naming

SLACK_NAMING = Naming(person="<@{}>".format, group="<!subteam^{}>".format, tool="`{}`".format, to_actor=True)
"""Slack's mrkdwn names, for a refusal shown in Slack to the one who acted."""


def who_may_decide(approvers: tuple[str, ...], *, plain: bool = False) -> str:
    """The approvers in words: Slack mentions (`<@U1> or <!subteam^S1>`), or plain (`U1 or the members
    of user group S1`); none named: anyone in the conversation."""
    return (Naming() if plain else SLACK_NAMING).people(approvers)
