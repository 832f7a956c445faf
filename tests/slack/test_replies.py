"""Replies: streamed where Slack allows it, else posted and updated as mrkdwn; long answers split."""

from __future__ import annotations

from bot.slack_emulator import BOT_USER_ID, SlackEmulator
from tests.support.scripted_model import reply
from tests.support.slack import slack_workspace

from .harness import running_bot

LONG = "\n\n".join(f"Paragraph {i}: " + "word " * 150 for i in range(12))  # ~9,000 characters


async def test_without_streaming_the_answer_is_posted_as_mrkdwn(database_url, model):
    model.chat.push(reply("**Done**, see [the docs](https://example.com)."))
    async with (
        SlackEmulator(slack_workspace(), streaming=False) as slack,
        running_bot(database_url=database_url, slack=slack) as bot,
    ):
        event = await bot.mention("hi")
        await slack.wait_for("chat.postMessage")
        await slack.settle()
        [message] = slack.thread("C1", event["ts"])
        assert message.text == "*Done*, see <https://example.com|the docs>."


async def test_long_streamed_answer_is_split_into_messages(bot, model):
    model.chat.push(reply(LONG))
    await bot.mention("tell me a lot")
    await bot.slack.wait_for("chat.stopStream", count=3)
    await bot.slack.settle()
    messages = [m for m in bot.slack.messages.values() if m.user == BOT_USER_ID and m.thread_ts]
    assert len(messages) >= 3 and all(len(m.text) <= 3900 for m in messages)
    assert "".join(m.text for m in messages).replace("\n", "").replace(" ", "") == LONG.replace("\n", "").replace(
        " ", ""
    )


async def test_long_posted_answer_is_split_into_messages(database_url, model):
    model.chat.push(reply(LONG))
    async with (
        SlackEmulator(slack_workspace(), streaming=False) as slack,
        running_bot(database_url=database_url, slack=slack) as bot,
    ):
        await bot.mention("tell me a lot")
        await slack.wait_for("chat.postMessage", count=3)
        await slack.settle()
        messages = [m for m in slack.messages.values() if m.user == BOT_USER_ID and m.thread_ts]
        assert len(messages) >= 3 and all(len(m.text) <= 3900 for m in messages)
        assert all(m.text.startswith("Paragraph") for m in messages)


async def test_the_text_of_a_step_taken_over_is_taken_back_before_slack_has_it(slack):
    """A replica that stalled mid-step wakes with the model's reply for a run another replica took over: its
    text is no answer (the step was not stored), so the reply takes it back and shows only the note; text of
    earlier steps stays."""
    from slack_sdk.web.async_client import AsyncWebClient

    from bot.slack.replies import ThreadReply
    from bot.slack.threads import SlackThread
    from bot.slack.translator import translator

    thread = SlackThread(team_id="T0PLAY", channel="C1", thread_ts=slack.workspace.post("C1", "U1", "hi").ts)
    client = AsyncWebClient(token="xoxb-test-token", base_url=slack.api_url, retry_handlers=[])
    answer = ThreadReply(client, thread, recipient="U1", tr=translator("en"))
    await answer.append("Ich sehe nach. ")  # an earlier step's text, stored
    stale = "完了 delete-record 60"
    await answer.append(stale)
    assert answer.take_back(len(stale)) == 0  # Slack had none of it
    await answer.append(":warning: another replica took the run over")
    await answer.close()
    await slack.settle()
    [shown] = [m.text for m in slack.messages.values() if m.thread_ts == thread.thread_ts and m.ts != thread.thread_ts]
    assert shown == "Ich sehe nach. :warning: another replica took the run over"


async def test_steps_kept_while_no_message_is_open_go_with_the_first_words_and_never_alone(slack):
    """A call's step that comes while no message of the answer is open waits for its words: an answer that
    ends without any (its run went on elsewhere: another replica, or recovery, shows what follows) leaves no
    message of cards alone, which a replica stopped (or handed off) between a call's end and the model's
    words used to leave (the long soak, seeds 43002 and 45000)."""
    from slack_sdk.web.async_client import AsyncWebClient

    from bot.slack.replies import Step, ThreadReply
    from bot.slack.threads import SlackThread
    from bot.slack.translator import translator

    thread = SlackThread(team_id="T0PLAY", channel="C1", thread_ts=slack.workspace.post("C1", "U1", "hi").ts)
    client = AsyncWebClient(token="xoxb-test-token", base_url=slack.api_url, retry_handlers=[])
    declined = Step(id="call_1", tool_name="delete-record", state="declined", details="no")
    handed_off = ThreadReply(client, thread, recipient="U1", tr=translator("en"))
    await handed_off.step(declined, only_if_open=True)
    await handed_off.close(feedback={"type": "divider"})
    await slack.settle()
    assert [m for m in slack.messages.values() if m.thread_ts == thread.thread_ts and m.ts != thread.thread_ts] == []

    answered = ThreadReply(client, thread, recipient="U1", tr=translator("en"))
    await answered.step(declined, only_if_open=True)
    await answered.append("OK, I left it.")
    await answered.close()
    await slack.settle()
    [shown] = [m for m in slack.messages.values() if m.thread_ts == thread.thread_ts and m.ts != thread.thread_ts]
    assert shown.text == "OK, I left it."
    assert [b["task_id"] for b in shown.blocks if b.get("type") == "task_card"] == ["call_1"]
