"""Thumbs up / down under the agent's answers: Slack's feedback buttons on a finished answer (streamed or
posted), a click recorded per run and person with the tools the answer used, a second click that changes
the rating without counting twice, the metric, and the per-tool counts in an admin's App Home."""

from __future__ import annotations

import pytest

from bot.slack.feedback_builder import FEEDBACK
from bot.slack.services import services_of_app
from bot.slack_emulator.app_requests import app_home_opened_event
from bot.slack_emulator.workspace import Message
from tests.support.scripted_model import call, reply, tool_calls

from ...harness import RunningBot, home_of, published, running_bot, scrape, text_of, value


def feedback_element(message: Message) -> dict | None:
    for block in message.blocks:
        if block.get("type") == "context_actions":
            return next((e for e in block["elements"] if e.get("type") == "feedback_buttons"), None)
    return None


def rating_value(message: Message, rating: str) -> str:
    element = feedback_element(message)
    assert element is not None, "the answer has no feedback buttons"
    return element["positive_button" if rating == "up" else "negative_button"]["value"]


async def answer_of(bot: RunningBot, text: str) -> Message:
    """Mention the bot with `text`; the finished answer's message."""
    await bot.mention(text)
    stops = await bot.slack.wait_for("chat.stopStream")
    return bot.slack.message("C1", stops[-1].params["ts"])


async def rate(bot: RunningBot, message: Message, rating: str, *, user: str = "U1") -> str:
    """Click 👍 or 👎 under `message` as `user`; the ephemeral reply they alone got."""
    before = len(bot.slack.calls_of("chat.postEphemeral"))
    answer = await bot.sender.click(message, FEEDBACK, user=user, value=rating_value(message, rating))
    assert answer.status == 200
    ephemerals = await bot.slack.wait_for("chat.postEphemeral", count=before + 1)
    assert ephemerals[-1].params["user"] == user
    return ephemerals[-1].params["text"]


async def ratings(bot: RunningBot) -> list[tuple[str, int, int]]:
    feedback = services_of_app(bot.app).stores.feedback
    return [(t.tool_name, t.up, t.down) for t in await feedback.counts_per_tool()]


async def test_a_finished_answer_carries_feedback_buttons_and_a_click_is_recorded_with_its_tools(bot, model):
    model.chat.push(
        tool_calls(call("list-records", {}, id="call_1")), reply("Il y a 3 enregistrements : 東京, 서울, القاهرة.")
    )
    message = await answer_of(bot, "list records")
    assert message.text == "Il y a 3 enregistrements : 東京, 서울, القاهرة."
    element = feedback_element(message)
    assert element is not None and element["action_id"] == FEEDBACK
    assert (element["positive_button"]["text"]["text"], element["negative_button"]["text"]["text"]) == ("👍", "👎")
    before = await scrape(bot)

    assert await rate(bot, message, "up") == "Thanks for your feedback 👍."
    assert await ratings(bot) == [("list-records", 1, 0)]
    after = await scrape(bot)
    assert value(after, "bot_feedback_total", rating="up") == value(before, "bot_feedback_total", rating="up") + 1


async def test_a_second_click_changes_the_rating_and_the_same_click_again_counts_nothing(bot, model):
    model.chat.push(tool_calls(call("list-records", {}, id="call_1")), reply("3 records."))
    message = await answer_of(bot, "list records")
    before = await scrape(bot)

    await rate(bot, message, "up")
    assert await rate(bot, message, "up") == "You rated this answer 👍 already."
    assert await ratings(bot) == [("list-records", 1, 0)]
    assert await rate(bot, message, "down") == "Your rating of this answer is now 👎. Thanks!"
    assert await ratings(bot) == [("list-records", 0, 1)]
    await rate(bot, message, "up", user="U2")  # another person's rating counts on its own
    assert await ratings(bot) == [("list-records", 1, 1)]

    after = await scrape(bot)
    given = {
        r: value(after, "bot_feedback_total", rating=r) - value(before, "bot_feedback_total", rating=r)
        for r in ("up", "down")
    }
    changed = value(after, "bot_feedback_changed_total", rating="down") - value(
        before, "bot_feedback_changed_total", rating="down"
    )
    assert given == {"up": 2, "down": 0} and changed == 1  # fmt: skip


async def test_an_approved_calls_answer_counts_for_the_tools_that_ran_not_the_declined(bot, model):
    model.chat.push(
        tool_calls(call("list-records", {}, id="call_1"), call("delete-record", {"id": 2}, id="call_2")),
        reply("Listed them; record 2 is deleted."),
    )
    await bot.mention("list records and delete record 2")
    approval = await bot.approval_message()
    await bot.sender.click(approval, "tool_approve", user="U2")
    stops = await bot.slack.wait_for("chat.stopStream", lambda c: c.params.get("blocks"))
    message = bot.slack.message("C1", stops[-1].params["ts"])
    assert message.text.endswith("record 2 is deleted.")
    # the part before the approval is not the answer yet (its card of list-records, without words, is not
    # a message of its own: it goes with the words that follow)
    with_buttons = [m for m in bot.slack.thread("C1", approval.thread_ts) if feedback_element(m) is not None]
    assert with_buttons == [message]
    await rate(bot, message, "down")
    assert await ratings(bot) == [("delete-record", 0, 1), ("list-records", 0, 1)]


async def test_an_answer_waiting_for_approval_has_no_buttons_and_a_declined_one_counts_no_tool(bot, model):
    model.chat.push(
        tool_calls(call("delete-record", {"id": 2}, id="call_1"), text="Je vais supprimer l'enregistrement 2."),
        reply("D'accord, je ne le supprime pas."),
    )
    await bot.mention("delete record 2")
    approval = await bot.approval_message()
    [start] = bot.slack.calls_of("chat.startStream")
    assert feedback_element(bot.slack.message("C1", start.response["ts"])) is None
    await bot.sender.click(approval, "tool_decline", user="U1")
    stops = await bot.slack.wait_for("chat.stopStream", count=2)
    message = bot.slack.message("C1", stops[-1].params["ts"])
    await rate(bot, message, "up")
    assert await ratings(bot) == [("", 1, 0)]


async def test_a_click_naming_another_threads_run_records_nothing(bot, model):
    model.chat.push(reply("Bonjour !"), reply("こんにちは"))
    first = await answer_of(bot, "hello")
    await bot.mention("hello again")
    stops = await bot.slack.wait_for("chat.stopStream", count=2)
    second = bot.slack.message("C1", stops[-1].params["ts"])
    forged = rating_value(first, "up")
    element = feedback_element(second)
    element["positive_button"]["value"] = forged  # the second thread's button, carrying the first's run
    answer = await bot.sender.click(second, FEEDBACK, value=forged)
    assert answer.status == 200
    [ephemeral] = await bot.slack.wait_for("chat.postEphemeral")
    assert ephemeral.params["text"] == "This answer can no longer be rated."
    assert await ratings(bot) == []
    answer = await bot.sender.click(second, FEEDBACK, value="up:")  # no run at all
    assert answer.status == 200
    await bot.slack.wait_for("chat.postEphemeral", count=2)
    assert await ratings(bot) == []


@pytest.mark.parametrize("text_length", [40, 3500])
async def test_where_slack_does_not_stream_the_posted_answer_carries_the_buttons(
    database_url, slack, model, text_length
):
    text = ("Ça marche, 東京 " * 300)[:text_length]
    model.chat.push(reply(text))
    async with running_bot(database_url=database_url, slack=slack, streaming=False) as bot:
        await bot.mention("hello")
        updates = await bot.slack.wait_for(
            "chat.update", lambda c: "context_actions" in str(c.params.get("blocks"))
        ) if text_length > 400 else None  # fmt: skip
        if updates is None:
            posts = await bot.slack.wait_for(
                "chat.postMessage", lambda c: "context_actions" in str(c.params.get("blocks"))
            )
            message = bot.slack.posted_by(posts[0])
        else:
            message = bot.slack.message("C1", updates[-1].params["ts"])
        sections = [b["text"]["text"] for b in message.blocks if b["type"] == "section"]
        assert "".join(sections) == message.text == text  # the text is shown, in sections of at most 3000
        assert all(len(s) <= 3000 for s in sections)
        await rate(bot, message, "up")
        assert await ratings(bot) == [("", 1, 0)]


async def test_an_admins_home_shows_the_ratings_per_tool(database_url, slack, model):
    async with running_bot(database_url=database_url, slack=slack, admins=("U1",)) as bot:
        status, _ = await bot.sender.event(app_home_opened_event("U1"))
        assert status == 200
        assert "No answer has been rated yet." in text_of(await home_of(bot, "U1"))
        status, _ = await bot.sender.event(app_home_opened_event("U2"))
        assert status == 200
        assert "Feedback on answers" not in text_of(await home_of(bot, "U2"))  # not an admin

        model.chat.push(tool_calls(call("list-records", {}, id="call_1")), reply("3 records."))
        message = await answer_of(bot, "list records")
        await rate(bot, message, "up", user="U1")
        await rate(bot, message, "down", user="U2")
        await bot.slack.wait_for(
            "views.publish", lambda c: c.params.get("user_id") == "U1" and "👎 1" in str(c.params.get("view"))
        )
        assert "`list-records`: 👍 1 · 👎 1" in text_of(published(bot, "U1")[-1])
