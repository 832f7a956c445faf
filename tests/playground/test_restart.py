"""A restart of the playground keeps the emulated workspace: the conversation, the approval's buttons
(an old click still decides its call), an open modal; and the playground's tables are its own."""

from __future__ import annotations

import aiohttp
import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from bot.playground import Playground
from bot.playground.migrations import SCHEMA
from bot.settings import Settings
from memory import Storage

from .browser import ALICE, BOB, PlaygroundPage, action_ids, record_ids, shown_text, thread

pytestmark = pytest.mark.both_databases


async def approval_in(page: PlaygroundPage, ts: str) -> dict:
    return (await page.wait_for(lambda s: [m for m in thread(s, ts) if action_ids(m)], what="the approval"))[0]


async def test_an_approval_asked_before_a_restart_is_decided_after_it(database_url):
    settings = Settings(database_url=database_url, openai_api_key=None)
    async with aiohttp.ClientSession() as session:
        async with Playground(settings, port=0, word_delay=0) as first:
            page = PlaygroundPage(first.url, session)
            ts = await page.say("@bot delete record 2")
            approval = await approval_in(page, ts)
            await page.settle()
            before = [(m["ts"], m["text"]) for m in (await page.state())["messages"]]

        async with Playground(settings, port=0, word_delay=0) as second:
            page = PlaygroundPage(second.url, session)
            state = await page.state()
            assert [(m["ts"], m["text"]) for m in state["messages"]] == before  # the conversation is still there
            kept = next(m for m in thread(state, ts) if m["ts"] == approval["ts"])
            assert action_ids(kept) == action_ids(approval)

            status, body = await page.click(approval, "tool_approve", user=BOB)  # the button shown before

            assert status == 200 and body["bot_status"] == 200
            await page.wait_for(
                lambda s: [m for m in thread(s, ts) if "Approved by <@UBOB>" in shown_text(m)], what="the decision"
            )
            await page.wait_for(lambda s: [m for m in thread(s, ts) if "record 2 is deleted" in m["text"]], what="done")
            assert 2 not in await record_ids(second)
            await page.settle()


async def test_a_modal_open_before_a_restart_can_still_be_submitted(tmp_path):
    settings = Settings(database_url=f"sqlite+aiosqlite:///{tmp_path}/playground.db", openai_api_key=None)
    async with aiohttp.ClientSession() as session:
        async with Playground(settings, port=0, word_delay=0) as first:
            page = PlaygroundPage(first.url, session)
            ts = await page.say("@bot delete record 4")
            await page.click(await approval_in(page, ts), "tool_decline_with_reason")
            modal = await page.wait_for(lambda s: s["modal"], what="the reason modal")
            await page.settle()

        async with Playground(settings, port=0, word_delay=0) as second:
            page = PlaygroundPage(second.url, session)
            kept = (await page.state(ALICE))["modal"]
            assert kept["id"] == modal["id"] and kept["view"] == modal["view"]
            reason = next(b for b in kept["view"]["blocks"] if b["type"] == "input")

            await page.submit(kept, {reason["block_id"]: "keep it"})

            await page.wait_for(
                lambda s: [m for m in thread(s, ts) if "Reason: keep it" in shown_text(m)], what="the decline"
            )
            assert (await page.state(ALICE))["modal"] is None
            assert 4 in await record_ids(second)
            await page.settle()


async def test_the_migrated_tables_are_what_the_models_declare(database_url):
    storage = Storage(database_url)
    try:
        await storage.migrate(SCHEMA)
        owned = set(SCHEMA.metadata.tables)

        def differences(connection) -> list:
            context = MigrationContext.configure(
                connection,
                opts={
                    "include_name": lambda name, kind, _parent: kind != "table" or name in owned,
                    "compare_type": False,
                },
            )
            return compare_metadata(context, SCHEMA.metadata)

        async with storage.engine.connect() as connection:
            assert await connection.run_sync(differences) == []
    finally:
        await storage.close()
