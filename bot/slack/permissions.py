"""Who may decide a waiting tool call from Slack: the one rule, kept in one place.

Until tool policies exist the rule is: anyone in the conversation may decide. Seeing the message (and
so being able to click it) already means being in the conversation. A policy-aware rule replaces
`anyone_in_conversation` through `SlackServices.decision_rule`, without touching the listeners.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, kw_only=True)
class DecisionCheck:
    """A user wants to decide (approve, decline, edit, answer) a waiting tool call."""

    user_id: str
    """Who clicked."""
    action: str
    """`approve`, `decline`, `edit_args` or `answer`."""
    requester: str
    """Whose request led to the call."""
    tool_name: str
    args: Any
    team_id: str
    channel: str
    thread_id: str


@dataclass(frozen=True)
class Verdict:
    """Whether the user may decide, and if not, the explanation they see."""

    allowed: bool
    explanation: str = ""


DecisionRule = Callable[[DecisionCheck], Awaitable[Verdict]]


async def anyone_in_conversation(check: DecisionCheck) -> Verdict:
    """The default rule: anyone who can see the message in the conversation may decide."""
    return Verdict(True)
