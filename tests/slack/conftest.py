"""Fixtures of the Slack tests: the bot running on the test's database with the emulated Slack (`slack`,
from tests/conftest.py): as it starts by default (`bot`), with the HTTP API (`api_bot`), with U1 an
admin (`home_bot`), or both (`admin_bot`); each on the test's `clock`. Helpers the files share are in
`harness.py`."""

from __future__ import annotations

import pytest

from .harness import API_TOKEN, running_bot


@pytest.fixture
async def bot(database_url, slack, model, clock):
    async with running_bot(database_url=database_url, slack=slack, clock=clock) as running:
        yield running


@pytest.fixture
async def api_bot(database_url, slack, model, clock):
    async with running_bot(database_url=database_url, slack=slack, api_token=API_TOKEN, clock=clock) as running:
        yield running


@pytest.fixture
async def home_bot(database_url, slack, model, clock):
    async with running_bot(database_url=database_url, slack=slack, admins=("U1",), clock=clock) as running:
        yield running


@pytest.fixture
async def admin_bot(database_url, slack, model, clock):
    async with running_bot(
        database_url=database_url, slack=slack, admins=("U1",), api_token=API_TOKEN, clock=clock
    ) as running:
        yield running
