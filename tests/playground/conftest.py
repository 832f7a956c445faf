"""A playground on a free loopback port for each test: its own SQLite database, the offline demo model
(answering at once), and an HTTP session to drive it as the page does."""

from __future__ import annotations

import aiohttp
import pytest

from bot.playground import Playground
from bot.settings import Settings

from .browser import PlaygroundPage


@pytest.fixture
async def playground(tmp_path):
    settings = Settings(database_url=f"sqlite+aiosqlite:///{tmp_path}/playground.db", openai_api_key=None)
    async with Playground(settings, port=0, word_delay=0) as running:
        yield running


@pytest.fixture
async def page(playground):
    async with aiohttp.ClientSession() as session:
        browser = PlaygroundPage(playground.url, session)
        yield browser
        await browser.settle()
