"""Fixtures of the Slack tests: the Slack stub, and the bot running on the test's database."""

from __future__ import annotations

import pytest

from tests.support.slack_stub import SlackStub

from .harness import running_bot


@pytest.fixture
async def slack():
    async with SlackStub() as stub:
        yield stub


@pytest.fixture
async def bot(database_url, slack, model):
    async with running_bot(database_url=database_url, slack=slack) as running:
        yield running
