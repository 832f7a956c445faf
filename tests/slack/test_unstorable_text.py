"""Text the databases cannot store (a NUL character, a lone surrogate) in what people send the bot: the
message is answered like any other, NULs removed and lone surrogates shown as U+FFFD (issue 17, item 8)."""

from __future__ import annotations

import pytest

from tests.support.scripted_model import reply

from .harness import RunningBot

pytestmark = pytest.mark.both_databases

SENT = "Bonjour\u0000 \ud800 你好 こんにちは 안녕 مرحبا \ud83d\ude00"
"""A NUL and a lone surrogate among French, Chinese, Japanese, Korean and Arabic text and an emoji
(a surrogate pair as Python holds it: one character once stored)."""
READ = "Bonjour \ufffd 你好 こんにちは 안녕 مرحبا 😀"


async def test_a_message_with_a_nul_and_a_lone_surrogate_is_answered(bot: RunningBot, model):
    model.chat.push(reply("Bonjour !"), reply("Encore bonjour !"))
    event = await bot.mention(SENT)
    await bot.slack.wait_for("chat.stopStream")
    assert model.chat.requests[0]["messages"][-1]["content"] == READ

    await bot.say(SENT + " ٢", thread_ts=event["ts"])  # a follow-up, queued with its text before its turn
    stops = await bot.slack.wait_for("chat.stopStream", count=2)
    assert model.chat.requests[1]["messages"][-1]["content"] == READ + " ٢"
    assert [bot.slack.message("C1", stop.params["ts"]).text for stop in stops] == ["Bonjour !", "Encore bonjour !"]
    # the first message came back from storage as the bot read it
    assert {"role": "user", "content": READ} in model.chat.requests[1]["messages"]
    answers = [m for m in bot.slack.workspace.thread("C1", event["ts"]) if m.user != "U1"]
    assert [m.text for m in answers] == ["Bonjour !", "Encore bonjour !"], [m.all_text for m in answers]
    assert all(b["type"] == "context_actions" for m in answers for b in m.blocks)  # nothing else: the 👍 / 👎
