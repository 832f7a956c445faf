"""Old names of `tests.support.slack` and `bot.slack_emulator`, for tests written before the one emulation."""

from bot.slack_emulator import BOT_ID, BOT_USER_ID, TEAM_ID, SlackCall, SlackEmulator
from bot.slack_emulator import Message as StubMessage

from .slack import SignedSender, slack_workspace


def SlackStub(**kwargs) -> SlackEmulator:  # noqa: N802 - the old class name
    """The emulator over the tests' workspace."""
    return SlackEmulator(slack_workspace(), **kwargs)


__all__ = ["BOT_ID", "BOT_USER_ID", "TEAM_ID", "SignedSender", "SlackCall", "SlackStub", "StubMessage"]
