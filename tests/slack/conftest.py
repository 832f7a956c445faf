"""Fixtures of the Slack tests: the emulated Slack (`slack`), and the bot running on the test's database (`bot`)."""

from __future__ import annotations

import pytest

from bot.slack_emulator import SlackEmulator
from tests.support.slack import slack_workspace

from .harness import running_bot


@pytest.fixture
async def slack():
    async with SlackEmulator(slack_workspace()) as emulator:
        yield emulator


@pytest.fixture
async def bot(database_url, slack, model):
    async with running_bot(database_url=database_url, slack=slack) as running:
        yield running
