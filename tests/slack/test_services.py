"""An app's services live as long as its Bolt app (`bot.slack.services`): a stopped bot leaves its app, and
with it its agent, clients and database engines, to the garbage collector. A test process builds hundreds of
apps; kept, every full collection walked all of them while it held every thread, the acks' too."""

from __future__ import annotations

import gc
import weakref

from .harness import ask_to_delete, running_bot


async def test_a_stopped_bot_leaves_its_app_to_the_garbage_collector(database_url, slack, model):
    ask_to_delete(model)
    async with running_bot(database_url=database_url, slack=slack) as bot:
        await bot.mention("delete record 3")
        await bot.sender.click(await bot.approval_message(), "tool_approve")
        await bot.slack.wait_for("chat.update")
        app = weakref.ref(bot.app)
    del bot
    gc.collect()
    assert app() is None, "something still holds the stopped bot's app"
